"""The pod webhook follows the `inferenceservice-config` ConfigMap (no restart): the next pod admitted after
an edit is mutated by the new settings; an edit that does not parse keeps the last valid ones; a ConfigMap
not (yet) in the cache leaves the manager's start config in force. The ConfigMap comes from a fake config
source (a mutable holder standing in for the informer cache); e2e: tests/e2e/test_pod_webhook_config_reload.py.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonpatch
import orjson
import structlog

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.webhooks import pod_mutation, registry
from tests.unit.resolution.fake_reader import FakeReader
from tests.unit.webhooks.reviews import call, review

Obj = dict[str, Any]
PATH = "/mutate-pods"
SCRAPING = "ome.io/enable-prometheus-scraping"


class FakeConfigMaps:
    """What the informer cache holds for inferenceservice-config: set, edit (a new resourceVersion), delete."""

    def __init__(self) -> None:
        self.obj: Obj | None = None
        self.version = 0
        self.lookups = 0

    def put(self, data: dict[str, str]) -> None:
        self.version += 1
        self.obj = {"metadata": {"name": "inferenceservice-config", "namespace": "ome",
                                 "resourceVersion": str(self.version)}, "data": data}

    def lookup(self) -> Obj | None:
        self.lookups += 1
        return self.obj


def aggregator(scraping: str, aggregation: str = "false") -> dict[str, str]:
    return {"metricsAggregator": json.dumps({"enableMetricAggregation": aggregation,
                                             "enablePrometheusScraping": scraping})}


def pod() -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "demo", "labels": {"ome.io/inferenceservice": "svc"},
                         "annotations": {}},
            "spec": {"containers": [{"name": "ome-container", "image": "x"}]}}


def admitted(source: pod_mutation.PodSettingsSource) -> dict[str, str]:
    obj = pod()
    got = call(registry.handlers(FakeReader(), source)[PATH], review("Pod", obj))
    assert got["allowed"] is True, got
    patch = orjson.loads(base64.b64decode(got["patch"])) if got.get("patch") else []
    annotations: dict[str, str] = jsonpatch.JsonPatch(patch).apply(obj)["metadata"]["annotations"]
    return annotations


def test_an_edit_applies_to_the_next_admitted_pod() -> None:
    maps = FakeConfigMaps()
    maps.put(aggregator("false"))
    source = pod_mutation.PodSettingsSource(maps.lookup, InferenceServiceConfig())
    first = admitted(source)
    assert first[SCRAPING] == "false" and "prometheus.io/port" not in first
    maps.put(aggregator("true"))  # kubectl edit: the watch brings a new resourceVersion
    second = admitted(source)
    # metricsAggregator's scraping default "true": the pod gets scraping on 9091 (labels-and-annotations.md)
    assert second[SCRAPING] == "true"
    assert second["prometheus.io/port"] == "9091" and second["prometheus.io/path"] == "/metrics"
    maps.put(aggregator("true", aggregation="true"))
    assert admitted(source)["prometheus.io/port"] == "9088"


def test_the_start_config_holds_until_the_cache_has_the_configmap() -> None:
    maps = FakeConfigMaps()
    start = InferenceServiceConfig.model_validate(
        {"metricsAggregator": {"enableMetricAggregation": "false", "enablePrometheusScraping": "true"}})
    source = pod_mutation.PodSettingsSource(maps.lookup, start)
    assert admitted(source)[SCRAPING] == "true"
    maps.put(aggregator("false"))
    assert admitted(source)[SCRAPING] == "false"
    maps.obj = None  # deleted (or a relist in progress): the last settings stay
    assert admitted(source)[SCRAPING] == "false"


def test_an_edit_that_does_not_parse_keeps_the_last_valid_settings_and_is_logged_once() -> None:
    maps = FakeConfigMaps()
    maps.put(aggregator("true"))
    source = pod_mutation.PodSettingsSource(maps.lookup, InferenceServiceConfig())
    assert admitted(source)[SCRAPING] == "true"
    with structlog.testing.capture_logs() as logs:
        maps.put({**aggregator("false"), "deploy": "{not json"})
        assert admitted(source)[SCRAPING] == "true"
        assert admitted(source)[SCRAPING] == "true"
    rejected = [e for e in logs if e["event"].startswith("inferenceservice-config edit rejected")]
    assert len(rejected) == 1 and "deploy" in rejected[0]["error"]
    maps.put(aggregator("false"))  # fixed: applies again
    assert admitted(source)[SCRAPING] == "false"


def test_settings_are_derived_again_only_when_the_configmap_moved() -> None:
    maps = FakeConfigMaps()
    maps.put(aggregator("true"))
    source = pod_mutation.PodSettingsSource(maps.lookup, InferenceServiceConfig())
    first = source.current()
    assert source.current() is first and maps.lookups == 2
    maps.put(aggregator("true"))  # same content, new version: equal settings, the same object kept
    assert source.current() is first


def test_model_init_follows_the_modelinit_entry() -> None:
    maps = FakeConfigMaps()
    maps.put({"modelInit": json.dumps({"image": "agent:1", "memoryRequest": "1Gi"})})
    source = pod_mutation.PodSettingsSource(maps.lookup, InferenceServiceConfig())
    entry = source.current().injections.model_init
    assert entry is not None and entry.image == "agent:1"
    maps.put({"modelInit": json.dumps({"image": "agent:2", "memoryRequest": "1Gi"})})
    entry = source.current().injections.model_init
    assert entry is not None and entry.image == "agent:2"
