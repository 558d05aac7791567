"""The generated CRDs install on a real apiserver and accept the sample catalog."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from ome.devcluster.crds import install_crds
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.resources import resource_for

ROOT = Path(__file__).resolve().parents[2]


async def test_all_crds_become_established_and_samples_are_accepted(client: Client, namespace: str) -> None:
    names = await install_crds(client)
    assert len(names) == 14
    created: list[tuple[Any, str]] = []
    try:
        for index, path in enumerate(sorted((ROOT / "config" / "samples").glob("*.yaml"))):
            for doc in yaml.safe_load_all(path.read_text()):
                if not doc:
                    continue
                res = resource_for(doc["apiVersion"], doc["kind"])
                doc.setdefault("metadata", {}).pop("namespace", None)
                # Samples reuse names across files; only CRD validation is under test here.
                suffix = namespace[-6:] if not res.namespaced else str(index)
                doc["metadata"]["name"] = f"{doc['metadata']['name'][:50]}-{suffix}"
                for _attempt in range(50):  # discovery of fresh CRDs can lag a moment
                    try:
                        obj = await client.create(res, doc, namespace if res.namespaced else None)
                        break
                    except errors.NotFound:
                        await asyncio.sleep(0.1)
                else:
                    raise AssertionError(f"{res.kind} never served")
                created.append((res, obj["metadata"]["name"]))
                assert obj["spec"] == {**obj["spec"], **{k: v for k, v in doc.get("spec", {}).items()
                                                          if not isinstance(v, dict | list)}}, path.name
    finally:
        for res, name in created:
            if not res.namespaced:
                try:
                    await client.delete(res, name)
                except errors.NotFound:
                    pass
    assert created, "the sample catalog is empty"
