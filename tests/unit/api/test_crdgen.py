"""The CRD generator: structural output, the facts it carries, and the committed files."""

from __future__ import annotations

import http.server
import importlib.util
import json
import threading
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml

from ome.api import crdgen
from ome.api.k8s_openapi import DATA_FILE, K8sSchemas, MissingSchemaError, ref_closure
from ome.api.schema import SchemaBuilder, embedded_refs
from ome.api.v1beta1 import KINDS, InferenceService, ServingRuntime

from .helpers import CRD_DIR, LOADER, MINI_OPENAPI, REPO
from .structural import structural_problems, walk


@pytest.fixture(scope="module")
def crds() -> dict[str, dict[str, Any]]:
    """kind -> CRD, generated with the hand-made mini OpenAPI fixture."""
    k8s = K8sSchemas.load(MINI_OPENAPI)
    builder = SchemaBuilder(k8s)
    return {cls.crd.kind: crdgen.build_crd(builder, cls) for cls in KINDS}


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    node = schema
    for part in path.split("."):
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


def test_every_crd_is_structural(crds: dict[str, dict[str, Any]]) -> None:
    for kind, crd in crds.items():
        assert structural_problems(_schema(crd)) == [], kind


def test_names_scope_and_subresources(crds: dict[str, dict[str, Any]]) -> None:
    isvc = crds["InferenceService"]
    assert isvc["metadata"]["name"] == "inferenceservices.ome.io"
    assert isvc["spec"]["names"] == {
        "kind": "InferenceService",
        "listKind": "InferenceServiceList",
        "plural": "inferenceservices",
        "singular": "inferenceservice",
        "shortNames": ["isvc"],
    }
    assert isvc["spec"]["scope"] == "Namespaced"
    assert crds["ClusterBaseModel"]["spec"]["scope"] == "Cluster"
    version = crds["InferenceReplica"]["spec"]["versions"][0]
    assert version["subresources"] == {
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.labelSelector",
        },
        "status": {},
    }
    assert crds["TrafficMap"]["spec"]["names"]["shortNames"] == ["tm", "tmap"]


def test_printer_columns(crds: dict[str, dict[str, Any]]) -> None:
    cols = crds["InferenceService"]["spec"]["versions"][0]["additionalPrinterColumns"]
    assert cols[0] == {"name": "URL", "type": "string", "jsonPath": ".status.url"}
    assert {
        "name": "Placement",
        "type": "string",
        "jsonPath": ".status.placement.phase",
        "priority": 1,
    } in cols
    irep = crds["InferenceReplica"]["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [c["name"] for c in irep] == ["Component", "Desired", "Current", "Ready", "Available", "Age"]


def test_model_facts_reach_the_schema(crds: dict[str, dict[str, Any]]) -> None:
    spec = _at(_schema(crds["InferenceService"]), "spec")
    assert _at(spec, "deploymentMode")["enum"] == ["OMENative", "RawDeployment"]
    assert _at(spec, "model")["required"] == ["name"]
    assert _at(spec, "model.kind")["default"] == "ClusterBaseModel"
    assert _at(spec, "runtime.autoSync")["default"] is True
    assert _at(spec, "ttlSecondsAfterCreation") == {"type": "integer", "format": "int64", "minimum": 1}
    assert _at(spec, "engine.minAvailable") == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    groups = _at(spec, "rollout.groups")
    assert groups["maxItems"] == 3 and groups["x-kubernetes-list-type"] == "atomic"
    rules = [r["rule"] for r in groups["items"]["x-kubernetes-validations"]]
    assert any("has(self.canary)" in r for r in rules)
    assert spec["x-kubernetes-validations"]
    quantity = _at(spec, "routing.capacityFactors")["additionalProperties"]
    assert quantity["x-kubernetes-int-or-string"] is True and "pattern" in quantity


def test_component_inlines_the_pod_spec(crds: dict[str, dict[str, Any]]) -> None:
    engine = _at(_schema(crds["InferenceService"]), "spec.engine")
    props = engine["properties"]
    assert {"containers", "volumes", "nodeSelector", "tolerations", "minReplicas", "runner"} <= set(props)
    assert "ephemeralContainers" not in props
    assert "required" not in engine  # containers are optional on a component
    runner = props["runner"]
    assert "required" not in runner and {"name", "image", "env"} <= set(runner["properties"])
    # leader and worker inline the pod spec too
    assert "volumes" in _at(engine, "worker")["properties"]


def test_embedded_types_become_crd_shapes(crds: dict[str, dict[str, Any]]) -> None:
    engine = _at(_schema(crds["InferenceService"]), "spec.engine")
    port = _at(engine, "containers.[].ports.[]")
    assert port["properties"]["protocol"]["default"] == "TCP"
    assert "default" not in port["properties"]["containerPort"]  # zero default dropped
    pull_secret = _at(engine, "imagePullSecrets.[]")
    assert pull_secret["properties"]["name"]["default"] == ""  # kept: an optional list-map key
    strategy = _at(engine, "deploymentStrategy.rollingUpdate.maxSurge")
    assert strategy["x-kubernetes-int-or-string"] is True
    for node in walk(_schema(crds["InferenceService"])):
        assert "description" not in node and "$ref" not in node and "allOf" not in node
        assert node.get("default") not in ({}, [])
    template = _at(_schema(crds["InferenceReplica"]), "spec.runners.[].template.metadata")
    assert template == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def test_status_and_root_rules(crds: dict[str, dict[str, Any]]) -> None:
    assert _at(_schema(crds["InferenceService"]), "status")["x-kubernetes-preserve-unknown-fields"] is True
    irep_status = _at(_schema(crds["InferenceReplica"]), "status")
    assert len(irep_status["x-kubernetes-validations"]) == 2
    columns = _at(irep_status, "instanceStatusColumns")
    assert columns["required"] == ["members", "phases"]
    assert _at(columns, "members")["pattern"].startswith("^(0|[1-9]")
    quota = _schema(crds["AcceleratorQuota"])
    assert quota["x-kubernetes-validations"][0]["rule"] == "size(self.metadata.name) <= 63"
    assert _schema(crds["AcceleratorClass"])["required"] == ["spec"]
    conditions = _at(_schema(crds["WorkloadCluster"]), "status.conditions")
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert set(conditions["items"]["required"]) == {
        "type",
        "status",
        "lastTransitionTime",
        "reason",
        "message",
    }


def test_missing_kubernetes_type_is_an_error_unless_lenient() -> None:
    with pytest.raises(MissingSchemaError):
        K8sSchemas({}).resolve("io.k8s.api.core.v1.PodSpec")
    lenient = K8sSchemas({}, lenient=True)
    crd = crdgen.build_crd(SchemaBuilder(lenient), ServingRuntime)
    problems = structural_problems(_schema(crd))
    assert problems and all("list-map key" in p for p in problems)  # keys of unknown item types
    assert "io.k8s.api.core.v1.Container" in lenient.missing


def test_embedded_refs_and_closure() -> None:
    roots = embedded_refs(list(KINDS))
    assert {"io.k8s.api.core.v1.PodSpec", "io.k8s.api.core.v1.PodTemplateSpec"} <= roots
    assert "io.k8s.api.autoscaling.v2.MetricSpec" in roots
    schemas = json.loads(MINI_OPENAPI.read_text())["components"]["schemas"]
    closure = ref_closure(schemas, ["io.k8s.api.core.v1.PodTemplateSpec"])
    assert "io.k8s.api.core.v1.ContainerPort" in closure
    assert "io.k8s.api.autoscaling.v2.MetricSpec" not in closure


def test_render_is_deterministic_and_check_detects_staleness(tmp_path: Path) -> None:
    k8s = K8sSchemas.load(MINI_OPENAPI)
    files = crdgen.render_all(k8s, [InferenceService])
    assert files == crdgen.render_all(K8sSchemas.load(MINI_OPENAPI), [InferenceService])
    assert yaml.safe_load(files["kustomization.yaml"])["resources"] == ["ome.io_inferenceservices.yaml"]
    assert crdgen.stale_files(tmp_path, files) == sorted(files)
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    assert crdgen.stale_files(tmp_path, files) == []


def test_cli_writes_then_checks(tmp_path: Path) -> None:
    out = tmp_path / "crd"
    args = ["--out", str(out), "--openapi", str(MINI_OPENAPI)]
    assert crdgen.main([*args, "--check"]) == 1
    assert crdgen.main(args) == 0
    assert crdgen.main([*args, "--check"]) == 0
    (out / "ome.io_trafficmaps.yaml").write_text("changed\n")
    assert crdgen.main([*args, "--check"]) == 1
    assert crdgen.main(["--openapi", str(tmp_path / "absent.json")]) == 2


def _capture_module() -> Any:
    spec = importlib.util.spec_from_file_location("capture_openapi", REPO / "hack" / "capture_openapi.py")
    assert spec is not None and spec.loader is not None
    capture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(capture)
    return capture


def test_capture_script_keeps_the_closure(tmp_path: Path) -> None:
    capture = _capture_module()
    schemas = json.loads(MINI_OPENAPI.read_text())["components"]["schemas"]
    for doc in capture.DOCUMENTS:  # split the fixture into the three documents
        part = {k: v for k, v in schemas.items() if doc.split("/")[-2:][0] in k or doc == "api/v1"}
        (tmp_path / (doc.replace("/", "__") + "_openapi.json")).write_text(
            json.dumps({"components": {"schemas": part}})
        )
    out = tmp_path / "out.json"
    assert capture.main(["--spec-dir", str(tmp_path), "--out", str(out)]) == 0
    kept = json.loads(out.read_text())["components"]["schemas"]
    assert set(capture.roots()) <= set(kept)
    assert all("description" not in json.dumps(v) for v in kept.values())


def test_capture_script_reads_an_apiserver(tmp_path: Path) -> None:
    capture = _capture_module()
    body = MINI_OPENAPI.read_bytes()
    seen: list[tuple[str, str | None]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            seen.append((self.path, self.headers.get("Authorization")))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "current-context": "dev",
                    "contexts": [{"name": "dev", "context": {"cluster": "c", "user": "u"}}],
                    "clusters": [
                        {"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}
                    ],
                    "users": [{"name": "u", "user": {"token": "t0k"}}],
                }
            )
        )
        out = tmp_path / "out.json"
        assert capture.main(["--kubeconfig", str(kubeconfig), "--out", str(out)]) == 0
    finally:
        server.shutdown()
        server.server_close()
    assert [path for path, _ in seen] == [f"/openapi/v3/{doc}" for doc in capture.DOCUMENTS]
    assert {auth for _, auth in seen} == {"Bearer t0k"}
    assert "io.k8s.api.core.v1.PodSpec" in json.loads(out.read_text())["components"]["schemas"]


# --- the committed CRDs, generated from the real apiserver schemas ------------------------------

needs_data = pytest.mark.skipif(
    not DATA_FILE.exists(), reason=f"{DATA_FILE} is absent: run hack/capture_openapi.py against a cluster"
)


def _spec_model(cls: Any) -> Any:
    """The pydantic model of `spec` (the annotation is `Spec | None`)."""
    annotation = cls.model_fields["spec"].annotation
    return next(arg for arg in typing.get_args(annotation) or (annotation,) if arg is not type(None))


def test_committed_crds_carry_every_kind_and_spec_field_of_the_api() -> None:
    """A property of the committed files against the API models, not a re-run of the generator."""
    for cls in KINDS:
        path = CRD_DIR / crdgen.crd_filename(cls)
        assert path.is_file(), f"{path.name} missing: run python -m ome.api.crdgen"
        crd = yaml.load(path.read_text(), Loader=LOADER)
        info = cls.crd
        assert crd["metadata"]["name"] == f"{info.plural}.ome.io"
        assert (crd["spec"]["names"]["kind"], crd["spec"]["scope"]) == (info.kind, info.scope)
        spec = _schema(crd)["properties"]["spec"]
        fields = {field.alias or name for name, field in _spec_model(cls).model_fields.items()}
        assert fields <= set(spec.get("properties", {})), f"{info.kind}: {sorted(fields - set(spec['properties']))}"
        if info.status_subresource:
            assert crd["spec"]["versions"][0]["subresources"].get("status") == {}, info.kind


@needs_data
def test_committed_crds_are_structural() -> None:
    for path in sorted(CRD_DIR.glob("ome.io_*.yaml")):
        crd = yaml.load(path.read_text(), Loader=LOADER)
        assert structural_problems(_schema(crd)) == [], path.name
