"""Installs the shipped `inferenceservice-config` (config/configmap) into a namespace: what a manager
started with `--config-namespace` there needs, since it refuses to start without that ConfigMap (as v1.3).
`chart_pdb_entry()` adds what a chart install has and the manifests leave out: the default budgets."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Final

import yaml

from ome.cmd.chartgen.go_format import go_json
from ome.cmd.chartgen.manifests import chart_pod_disruption_budget
from ome.config.pdb_config import PDBConfig
from ome.framework.client import Client
from ome.framework.resources import CONFIGMAPS

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIGMAP_FILE = REPO_ROOT / "config" / "configmap" / "inferenceservice-config.yaml"


def shipped_configmap(namespace: str, data: dict[str, str] | None = None) -> dict[str, Any]:
    """The ConfigMap as config/ ships it, placed in `namespace`; `data` entries replace the shipped ones."""
    body: dict[str, Any] = copy.deepcopy(yaml.safe_load(CONFIGMAP_FILE.read_text()))
    body["metadata"]["namespace"] = namespace
    body["data"].update(data or {})
    return body


CHART_PDB: Final = PDBConfig.model_validate(chart_pod_disruption_budget())
"""The chart's default budgets, parsed: for code that models a chart install (the bench, the e2e support)."""


def chart_pdb_entry() -> dict[str, str]:
    """The `podDisruptionBudget` entry the ome-resources chart writes with its default values (each mode
    `maxUnavailable: 1`), as `data` for the two functions here: without it, as on a manifest install, a
    component that sets no budget gets no PodDisruptionBudget."""
    return {"podDisruptionBudget": go_json(chart_pod_disruption_budget())}


async def install_config(client: Client, namespace: str, data: dict[str, str] | None = None) -> None:
    """Server-side applies the shipped ConfigMap into `namespace` (idempotent)."""
    body = shipped_configmap(namespace, data)
    await client.apply(CONFIGMAPS, body, field_manager="ome-installer", force=True)


__all__ = ["CHART_PDB", "CONFIGMAP_FILE", "chart_pdb_entry", "install_config", "shipped_configmap"]
