"""Paths and loaders shared by the API tests."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).parent / "fixtures"
MINI_OPENAPI = FIXTURES / "k8s-openapi-mini.json"
SAMPLES = REPO / "config" / "samples"
MODELS = REPO / "config" / "models"
RUNTIMES = REPO / "config" / "runtimes"
CATALOG_DIRS = (MODELS, RUNTIMES)
CRD_DIR = REPO / "config" / "crd"
# The v1.3 docs pages sit beside the repository (../shared/seeds), on every machine and in CI.
SEEDS = REPO.parent / "shared" / "seeds"


def seed_files() -> list[Path]:
    """The seed pages; missing seeds are a failure, never a skip, so CI cannot pass without them."""
    return sorted(SEEDS.glob("*.txt")) if SEEDS.is_dir() else []

# libyaml's loader when present: the committed CRDs are megabytes of YAML.
LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)


def seed_manifests(text: str) -> Iterator[dict[str, Any]]:
    """ome.io/v1beta1 manifests in a docs page: fenced YAML blocks, or, in a page rendered
    to plain text, runs of lines from ``apiVersion: ome.io/v1beta1`` to the next blank line."""
    blocks = _FENCE.findall(text)
    if not blocks:
        blocks = re.findall(r"^apiVersion: ome\.io/v1beta1\n(?:.+\n?)+", text, re.MULTILINE)
    for block in blocks:
        for doc in yaml.safe_load_all(block):
            if isinstance(doc, dict) and doc.get("apiVersion") == "ome.io/v1beta1":
                yield doc


def sample_manifests() -> list[tuple[str, dict[str, Any]]]:
    """(file name, object) for every object in config/samples."""
    out = []
    for path in sorted(SAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                out.append((path.name, doc))
    return out


def catalog_files() -> list[Path]:
    """The manifests of the model and runtime catalog (config/models, config/runtimes), no kustomizations."""
    return sorted(p for d in CATALOG_DIRS for p in d.rglob("*.yaml") if p.name != "kustomization.yaml")


def catalog_manifests() -> list[tuple[str, dict[str, Any]]]:
    """(path relative to the repo, object) for every object in the catalog."""
    out = []
    for path in catalog_files():
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                out.append((str(path.relative_to(REPO)), doc))
    return out
