"""Wiring of the BenchmarkJob controller: BenchmarkJobs, their Jobs (label `benchmark`), and the
InferenceServices they target (a service turning Ready starts its benchmarks without the minute's wait)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from ome.api.resources import BASE_MODELS, BENCHMARK_JOBS, CLUSTER_BASE_MODELS, INFERENCE_SERVICES, JOBS
from ome.controllers.benchmarkjob import builder
from ome.controllers.benchmarkjob.reconciler import BenchmarkJobReconciler
from ome.framework.controller import Controller
from ome.framework.manager import Manager
from ome.framework.reconcile import Request

Obj = dict[str, Any]
NAME: Final = "benchmarkjob"
TARGET_INDEX: Final = "benchmarkjobs.ome.io/inferenceservice"


def index_target(bench: Obj) -> list[str]:
    ref = ((bench.get("spec") or {}).get("endpoint") or {}).get("inferenceService") or {}
    return [f"{ref.get('namespace')}/{ref.get('name')}"] if ref.get("name") else []


def _readiness_changed(event_type: str, obj: Obj, old: Obj | None) -> bool:
    return old is None or builder.is_ready(obj) != builder.is_ready(old)


def add_to_manager(manager: Manager, *, config_namespace: str = "ome") -> Controller:
    cache = manager.cache
    benchmarks = cache.informer_for(BENCHMARK_JOBS)
    benchmarks.add_indexer(TARGET_INDEX, index_target)
    jobs = cache.informer_for(JOBS, label_selector=builder.LABEL)
    isvcs = cache.informer_for(INFERENCE_SERVICES)
    for models in (BASE_MODELS, CLUSTER_BASE_MODELS):  # read for the tokenizer path and node label
        cache.informer_for(models)
    controller = Controller(NAME, BenchmarkJobReconciler(cache, manager.client,
                                                         config_namespace=config_namespace))

    def targeting(isvc: Obj) -> Iterable[Request]:
        key = f"{isvc['metadata'].get('namespace')}/{isvc['metadata']['name']}"
        return [Request(b["metadata"]["namespace"], b["metadata"]["name"])
                for b in cache.list(BENCHMARK_JOBS, index=(TARGET_INDEX, key))]

    controller.for_(benchmarks)
    controller.owns(jobs, "ome.io", "BenchmarkJob")
    controller.watches(isvcs, targeting, _readiness_changed)
    manager.add_controller(controller)
    return controller


__all__ = ["NAME", "add_to_manager"]
