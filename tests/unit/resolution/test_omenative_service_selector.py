from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from ome.resolution import omenative


def _plan(worker: bool) -> Any:
    return SimpleNamespace(isvc="llama", component="engine", worker_pod_spec={"containers": []} if worker else None)


def test_service_selects_leaders_only_when_the_isvc_sets_worker() -> None:
    isvc = {"spec": {"engine": {"worker": {}}}}
    sel = omenative.service_selector(isvc, _plan(worker=True))
    assert sel[omenative.RUNNER_LABEL] == "leader"


def test_service_selects_workers_too_when_only_the_runtime_sets_worker() -> None:
    isvc = {"spec": {"engine": {}}}
    assert omenative.RUNNER_LABEL not in omenative.service_selector(isvc, _plan(worker=True))
