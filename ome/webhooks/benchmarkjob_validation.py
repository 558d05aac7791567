"""BenchmarkJob validation: a target, well-formed traffic scenarios and request parameters, an output place.

Scenario grammar per task (genai-bench's): text-to-text takes N(mean,stddev)/(mean,stddev),
U(min,max)/(min,max), U(min,max) or D(input,output); the image tasks take I(width,height) or
I(width,height,images). text-to-embeddings takes only the two-number E(n,n), and a text-to-embeddings job
must list its scenarios (benchmarks.md, "Traffic scenarios": a documented v1.3 bug kept as documented).
"""

from __future__ import annotations

import re
from typing import Any, Final

from ome.webhooks.handler import AdmissionRequest, Outcome
from ome.webhooks.loose import as_dict, as_list, dig, text

Obj = dict[str, Any]

_N = r"\d+"
_PAIR = rf"\({_N},{_N}\)"
_SCENARIOS: Final = {
    "text-to-text": re.compile(rf"^(N{_PAIR}/{_PAIR}|U{_PAIR}(/{_PAIR})?|D{_PAIR})$"),
    "text-to-embeddings": re.compile(rf"^E{_PAIR}$"),
    "image-to-text": re.compile(rf"^I\({_N},{_N}(,{_N})?\)$"),
    "image-to-embeddings": re.compile(rf"^I\({_N},{_N}(,{_N})?\)$"),
}
EMBEDDINGS_TASK: Final = "text-to-embeddings"
_URI = re.compile(r"^[a-z][a-z0-9+.-]*://\S+$")


def validate(request: AdmissionRequest) -> Outcome:
    spec = request.spec
    for error in (
        endpoint_error(spec),
        scenarios_error(spec),
        request_params_error(spec),
        storage_error(spec),
    ):
        if error is not None:
            return Outcome.deny(error)
    return Outcome()


def endpoint_error(spec: Obj) -> str | None:
    endpoint = as_dict(spec.get("endpoint"))
    has_isvc, has_url = endpoint.get("inferenceService") is not None, endpoint.get("endpoint") is not None
    if not has_isvc and not has_url:
        return "invalid endpoint: set spec.endpoint.endpoint or spec.endpoint.inferenceService"
    if has_isvc and has_url:
        return (
            "invalid endpoint: spec.endpoint.endpoint and spec.endpoint.inferenceService cannot both be set"
        )
    return None


def scenarios_error(spec: Obj) -> str | None:
    task = text(spec.get("task"))
    pattern = _SCENARIOS.get(task)
    if task == EMBEDDINGS_TASK and not as_list(spec.get("trafficScenarios")):
        return (
            f"invalid traffic scenarios: task {task!r} requires spec.trafficScenarios of the form E(<n>,<n>)"
        )
    for scenario in as_list(spec.get("trafficScenarios")):
        if pattern is None:
            return f"invalid traffic scenarios: no scenario format is defined for task {task!r}"
        if not isinstance(scenario, str) or not pattern.match(scenario.replace(" ", "")):
            return f"invalid traffic scenarios: {scenario!r} is not a valid scenario for task {task!r}"
    return None


def request_params_error(spec: Obj) -> str | None:
    params = as_dict(spec.get("additionalRequestParams"))
    if "temperature" in params:
        try:
            float(text(params["temperature"]) or "x")
        except ValueError:
            value = params["temperature"]
            return f"invalid additional request parameters: temperature {value!r} is not a number"
    if "ignore_eos" in params and params["ignore_eos"] not in ("true", "false"):
        return "invalid additional request parameters: ignore_eos must be 'true' or 'false'"
    return None


def storage_error(spec: Obj) -> str | None:
    uri = dig(spec, "outputLocation", "storageUri")
    if not text(uri):
        return "invalid storage: spec.outputLocation.storageUri cannot be empty"
    if not _URI.match(text(uri)):
        return f"invalid storage: {uri!r} is not a storage URI of the form <scheme>://<path>"
    return None
