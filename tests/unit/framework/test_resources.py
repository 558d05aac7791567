"""resources: REST paths and the apiVersion/kind registry."""

from __future__ import annotations

import pytest

from ome.api import resources
from ome.api.resources import Resource


@pytest.mark.parametrize(
    ("res", "args", "path"),
    [
        (resources.PODS, ("ns",), "/api/v1/namespaces/ns/pods"),
        (resources.PODS, (None,), "/api/v1/pods"),
        (resources.PODS, ("ns", "p1", "status"), "/api/v1/namespaces/ns/pods/p1/status"),
        (resources.NODES, (None, "n1"), "/api/v1/nodes/n1"),
        (resources.DEPLOYMENTS, ("ns", "d", "scale"), "/apis/apps/v1/namespaces/ns/deployments/d/scale"),
        (resources.INFERENCE_SERVICES, ("a",), "/apis/ome.io/v1beta1/namespaces/a/inferenceservices"),
        (resources.CLUSTER_BASE_MODELS, (None, "m"), "/apis/ome.io/v1beta1/clusterbasemodels/m"),
        (
            resources.LEASES,
            ("kube-system", "l"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l",
        ),
    ],
    ids=lambda v: v.kind if isinstance(v, Resource) else str(v),
)
def test_path(res: Resource, args: tuple[str | None, ...], path: str) -> None:
    assert res.path(*args) == path


@pytest.mark.parametrize(
    ("res", "args", "message"),
    [
        (resources.NODES, ("ns", "n"), "cluster-scoped"),
        (resources.PODS, (None, "p"), "namespaced"),
        (resources.PODS, ("ns", "p", "scale"), "no subresource"),
        (resources.DEPLOYMENTS, ("ns", None, "status"), "needs a name"),
        (resources.PODS, ("ns", ""), "empty"),
    ],
    ids=[
        "cluster-with-namespace",
        "namespaced-without",
        "unknown-subresource",
        "subresource-no-name",
        "empty-name",
    ],
)
def test_path_rejects_misuse(res: Resource, args: tuple[str | None, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        res.path(*args)


def test_names_are_quoted() -> None:
    assert resources.CONFIGMAPS.path("ns", "a/b") == "/api/v1/namespaces/ns/configmaps/a%2Fb"


def test_api_version_and_name() -> None:
    assert resources.PODS.api_version == "v1"
    assert resources.PDBS.api_version == "policy/v1"
    assert resources.HPAS.api_version == "autoscaling/v2"
    assert resources.DEPLOYMENTS.name == "deployments.apps"
    assert resources.PODS.name == "pods"


OME = [
    ("InferenceService", "inferenceservices", True),
    ("InferenceReplica", "inferencereplicas", True),
    ("ServingRuntime", "servingruntimes", True),
    ("ClusterServingRuntime", "clusterservingruntimes", False),
    ("BaseModel", "basemodels", True),
    ("ClusterBaseModel", "clusterbasemodels", False),
    ("FineTunedWeight", "finetunedweights", False),
    ("AcceleratorClass", "acceleratorclasses", False),
    ("BenchmarkJob", "benchmarkjobs", True),
    ("AutoscalerPolicy", "autoscalerpolicies", True),
    ("RolloutPolicy", "rolloutpolicies", True),
    ("AcceleratorQuota", "acceleratorquotas", False),
    ("WorkloadCluster", "workloadclusters", False),
    ("TrafficMap", "trafficmaps", True),
]


@pytest.mark.parametrize(("kind", "plural", "namespaced"), OME, ids=[k for k, _, _ in OME])
def test_every_ome_kind_is_registered(kind: str, plural: str, namespaced: bool) -> None:
    res = resources.resource_for("ome.io/v1beta1", kind)
    assert (res.plural, res.namespaced, res.group, res.version) == (plural, namespaced, "ome.io", "v1beta1")
    assert "status" in res.subresources


def test_inference_replica_has_scale() -> None:
    assert resources.INFERENCE_REPLICAS.subresources == {"status", "scale"}


def test_builtin_kinds_resolve() -> None:
    assert resources.resource_for("apps/v1", "Deployment") is resources.DEPLOYMENTS
    assert resources.resource_for("policy/v1", "PodDisruptionBudget") is resources.PDBS
    assert resources.resource_for("v1", "Pod") is resources.PODS


def test_unknown_kind_raises_a_clear_key_error() -> None:
    with pytest.raises(KeyError, match="unknown resource example.com/v1 Gadget.*register"):
        resources.resource_for("example.com/v1", "Gadget")


def test_register_is_idempotent_and_rejects_a_different_definition() -> None:
    gadget = Resource("example.com", "v1", "Gizmo", "gizmos", True)
    assert resources.register(gadget) is gadget
    resources.register(Resource("example.com", "v1", "Gizmo", "gizmos", True))
    assert resources.resource_for("example.com/v1", "Gizmo") == gadget
    with pytest.raises(ValueError, match="already registered"):
        resources.register(Resource("example.com", "v1", "Gizmo", "gizmoes", True))


def test_the_framework_declares_no_application_kind() -> None:
    """OME's kinds live in ome/api/resources.py; importing the framework alone registers none of them."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    code = (
        "import ome.framework.resources as r, ome.framework.manager\n"
        "print(sorted({x.group for x in r.registered()}))\n"
        "import ome.api.resources as a\n"
        "print(r.resource_for('ome.io/v1beta1', 'InferenceService') is a.INFERENCE_SERVICES)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert "ome.io" not in out[0]
    assert out[1] == "True"
