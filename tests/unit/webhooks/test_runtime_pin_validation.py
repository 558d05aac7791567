"""spec.runtime.revision at admission: autoSync must be false and the name must have the runtime's form."""

from __future__ import annotations

from typing import Any

from ome.api import resources
from ome.webhooks import registry
from tests.unit.resolution.fake_reader import FakeReader, isvc, model, runtime
from tests.unit.webhooks.reviews import call, review

PATH = "/validate-ome-io-v1beta1-inferenceservice"
READER = FakeReader(
    (resources.CLUSTER_BASE_MODELS, model("llama")), (resources.CLUSTER_SERVING_RUNTIMES, runtime("rt"))
)


def _answer(ref: dict[str, Any], namespace: str = "demo") -> dict[str, Any]:
    svc = isvc(model={"name": "llama"}, runtime={"name": "rt", **ref}, engine={})
    svc["metadata"]["namespace"] = namespace
    return call(registry.handlers(READER)[PATH], review("InferenceService", svc))


def test_revision_needs_autosync_false() -> None:
    for ref in ({"revision": "cr-rt-0123abcd"}, {"revision": "cr-rt-0123abcd", "autoSync": True}):
        answer = _answer(ref)
        assert answer["allowed"] is False
        assert answer["status"]["message"] == (
            "spec.runtime.revision requires spec.runtime.autoSync=false; AutoSync=true would silently ignore the pin"
        )


def test_revision_of_the_runtime_is_admitted_without_checking_it_exists() -> None:
    assert _answer({"revision": "cr-rt-0123abcd", "autoSync": False})["allowed"] is True


def test_cluster_runtime_revision_named_for_a_serving_runtime_is_rejected_as_documented() -> None:
    answer = _answer(
        {"revision": "cr-rt-590753e8", "autoSync": False, "kind": "ServingRuntime"}, "llama-demo"
    )
    assert answer["allowed"] is False
    assert answer["status"]["message"] == (
        'spec.runtime.revision "cr-rt-590753e8" does not match the expected naming convention for runtime '
        '"rt" (ServingRuntime); expected the form r-llama-demo-rt-<8 lowercase hex chars>'
    )


def test_revision_of_another_runtime_is_rejected() -> None:
    answer = _answer({"revision": "cr-other-0123abcd", "autoSync": False})
    assert answer["allowed"] is False
    assert "expected the form cr-rt-<8 lowercase hex chars>" in answer["status"]["message"]


def test_autosync_false_without_revision_is_admitted() -> None:
    assert _answer({"autoSync": False})["allowed"] is True
