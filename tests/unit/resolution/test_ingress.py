"""The Ingress OME creates with ingress creation on: hosts, backends, URL, and the per-service switch."""

from __future__ import annotations

from typing import Any

import pytest

from ome.config.inferenceservice_config import InferenceServiceConfig, parse
from ome.resolution import components, ingress
from tests.unit.resolution import builders

Obj = dict[str, Any]


def config(**ingress_entry: Any) -> InferenceServiceConfig:
    import json

    entry = {"disableIngressCreation": False, "ingressDomain": "example.com", **ingress_entry}
    return parse({"ingress": json.dumps(entry)})


def plans(isvc: Obj, **runtime: Any) -> list[components.ComponentPlan]:
    return components.build_plans(isvc, builders.runtime(**runtime), None, InferenceServiceConfig())


def _rules(obj: Obj) -> dict[str, tuple[str, int]]:
    out = {}
    for rule in obj["spec"]["rules"]:
        [path] = rule["http"]["paths"]
        assert (path["path"], path["pathType"]) == ("/", "Prefix")
        backend = path["backend"]["service"]
        out[rule["host"]] = (backend["name"], backend["port"]["number"])
    return out


def test_engine_only_gets_one_host_to_the_engine() -> None:
    isvc = builders.isvc("llama-chat", "llama-demo")
    obj = ingress.desired(isvc, plans(isvc), config(ingressClassName="nginx"))
    assert obj is not None
    assert obj["metadata"]["name"] == "llama-chat" and obj["spec"]["ingressClassName"] == "nginx"
    assert _rules(obj) == {"llama-chat.llama-demo.example.com": ("llama-chat-engine", 8080)}
    assert ingress.url(isvc, plans(isvc), config()) == "http://llama-chat.llama-demo.example.com:8080"


def test_router_and_decoder_get_hosts_of_their_own() -> None:
    isvc = builders.isvc("llama-chat", "llama-demo", decoder={}, router={})
    ps = plans(isvc, decoder_config={"runner": {"name": "ome-container", "image": "d:1",
                                                "ports": [{"containerPort": 8080}]}},
               router_config={"runner": {"name": "router", "image": "r:1", "ports": [{"containerPort": 8000}]}})
    obj = ingress.desired(isvc, ps, config())
    assert obj is not None
    assert _rules(obj) == {
        "llama-chat.llama-demo.example.com": ("llama-chat-router", 8000),
        "llama-chat-router.llama-demo.example.com": ("llama-chat-router", 8000),
        "llama-chat-engine.llama-demo.example.com": ("llama-chat-engine", 8080),
        "llama-chat-decoder.llama-demo.example.com": ("llama-chat-decoder", 8080),
    }
    gate = ingress.target(ps)
    assert gate is not None and gate.component == "router"


@pytest.mark.parametrize(("annotation", "configured", "enabled"), [
    (None, False, True), (None, True, False), ("true", False, False), ("false", True, True), ("yes", True, True),
])
def test_per_service_annotation_overrides_the_config(annotation: str | None, configured: bool,
                                                     enabled: bool) -> None:
    isvc = builders.isvc(annotations={"ome.io/ingress-disable-creation": annotation} if annotation else None)
    assert ingress.creation_enabled(isvc, config(disableIngressCreation=configured)) is enabled


def test_bad_domain_template_names_the_setting() -> None:
    with pytest.raises(ingress.IngressError, match="domainTemplate"):
        ingress.hostname("a", builders.isvc("a", "b"), config(domainTemplate="{{ .Name }}.{{ .Cluster }}"))


def test_url_scheme_annotation_and_copied_annotations() -> None:
    isvc = builders.isvc("llama-chat", "llama-demo", annotations={
        "ome.io/ingress-url-scheme": "https", "nginx.ingress.kubernetes.io/proxy-body-size": "64m"})
    assert ingress.url(isvc, plans(isvc), config()) == "https://llama-chat.llama-demo.example.com:8080"
    obj = ingress.desired(isvc, plans(isvc), config())
    assert obj is not None
    assert obj["metadata"]["annotations"] == {"nginx.ingress.kubernetes.io/proxy-body-size": "64m"}
