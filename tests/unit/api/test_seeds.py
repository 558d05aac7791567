"""Every ome.io/v1beta1 example in the v1.3 docs pages validates and round-trips."""

from __future__ import annotations

from typing import Any

import pytest

from ome.api.v1beta1 import InferenceService, parse_object

from .helpers import SEEDS, seed_files, seed_manifests

SEED_FILES = seed_files()


def _seed_docs() -> list[tuple[str, int, dict[str, Any]]]:
    return [(p.name, i, doc) for p in SEED_FILES for i, doc in enumerate(seed_manifests(p.read_text()))]


SEED_DOCS = _seed_docs()


def test_examples_are_found() -> None:
    assert SEED_FILES, f"the v1.3 seed pages are missing: expected them at {SEEDS} (../shared/seeds)"
    per_file: dict[str, int] = {}
    for name, _, _ in SEED_DOCS:
        per_file[name.split("_")[0]] = per_file.get(name.split("_")[0], 0) + 1
    assert per_file.get("000", 0) >= 2  # the OMENative page: whole service and one component
    assert len(SEED_DOCS) >= 2


@pytest.mark.parametrize(("page", "index", "doc"), SEED_DOCS, ids=[f"{p}#{i}" for p, i, _ in SEED_DOCS])
def test_example_validates_and_round_trips(page: str, index: int, doc: dict[str, Any]) -> None:
    obj = parse_object(doc)
    assert obj.to_dict() == doc, f"{page} example {index}"


def test_omenative_examples_use_the_documented_fields() -> None:
    pages = [doc for name, _, doc in SEED_DOCS if name.startswith("000")]
    whole, one = (InferenceService.model_validate(d) for d in pages[:2])
    assert whole.spec is not None and whole.spec.deployment_mode == "OMENative"
    assert one.spec is not None and one.spec.engine is not None
    assert one.spec.engine.annotation("ome.io/deploymentMode") == "OMENative"
    assert one.spec.router is not None and one.spec.router.min_replicas == 1


def test_plain_text_pages_are_read_too() -> None:
    text = (
        "intro\n\napiVersion: ome.io/v1beta1\nkind: InferenceService\n"
        "metadata:\n  name: a\nspec:\n  engine: {}\n\nmore\n"
    )
    assert list(seed_manifests(text)) == [
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": "a"},
            "spec": {"engine": {}},
        }
    ]
