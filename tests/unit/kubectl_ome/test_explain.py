"""`kubectl ome runtime explain`: the documented example, row order, reasons and wrapping."""

from __future__ import annotations

from typing import Any

from ome.kubectl_ome import explain

Obj = dict[str, Any]

MODEL: Obj = {"metadata": {"name": "llama-3-2-3b-instruct", "namespace": "team-a"}, "spec": {
    "modelFormat": {"name": "safetensors"}, "modelFramework": {"name": "transformers"},
    "modelParameterSize": "3.21B"}}


def runtime(name: str, *, fmt_weight: int = 1, fw_weight: int = 1, priority: int | None = None,
            auto: bool | None = True, disabled: bool = False, size: tuple[str, str] | None = None,
            namespace: str | None = None) -> Obj:
    entry: Obj = {"modelFormat": {"name": "safetensors", "weight": fmt_weight},
                  "modelFramework": {"name": "transformers", "weight": fw_weight}}
    if priority is not None:
        entry["priority"] = priority
    if auto is not None:
        entry["autoSelect"] = auto
    spec: Obj = {"supportedModelFormats": [entry]}
    if disabled:
        spec["disabled"] = True
    if size:
        spec["modelSizeRange"] = {"min": size[0], "max": size[1]}
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, "spec": spec}


def test_documented_example_rows_and_order() -> None:
    local = [runtime("team-llama", namespace="team-a")]
    cluster = [runtime("vllm-llama", fmt_weight=2, priority=2), runtime("srt-llama-1b", size=("500M", "2B")),
               runtime("vllm-base", auto=None), runtime("vllm-legacy", disabled=True)]
    rows = explain.explain(local, cluster, MODEL)
    got = [(r.runtime, r.scope, r.compatible, r.priority, r.weight) for r in rows]
    assert got == [
        ("team-llama", "Namespaced", True, 1, 2.0),
        ("vllm-llama", "Cluster", True, 2, 6.0),
        ("srt-llama-1b", "Cluster", False, None, None),
        ("vllm-base", "Cluster", False, None, None),
        ("vllm-legacy", "Cluster", False, None, None),
    ]
    reasons = {r.runtime: r.reason for r in rows}
    assert reasons["srt-llama-1b"] == "model size 3.21B is outside supported range [500M, 2B]"
    assert reasons["vllm-base"] == explain.NO_AUTO_SELECT
    assert reasons["vllm-legacy"] == "runtime is disabled"
    table = explain.format_explain(rows)
    lines = table.splitlines()
    assert lines[0].split() == ["RUNTIME", "SCOPE", "COMPATIBLE", "PRIORITY", "WEIGHT", "REASON"]
    assert lines[1].split() == ["team-llama", "Namespaced", "Yes", "1", "2", "-"]
    assert all(len(line) <= 80 for line in lines)
    assert "runtime is disabled" in table


def test_zero_score_with_auto_select_entry_is_explained() -> None:
    rows = explain.explain([], [runtime("neg", fmt_weight=-5, fw_weight=-5)], MODEL)
    assert rows[0].reason == "auto-select score is 0"
