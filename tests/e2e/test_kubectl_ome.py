"""kubectl-ome against the real control plane: hand-written InferenceReplica status, both encodings.

No controller runs: the test writes the InferenceService's and the InferenceReplica's status itself,
then runs the plugin as a subprocess, as `kubectl ome ...` would.
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from ome.api.resources import EVENTS, INFERENCE_REPLICAS, INFERENCE_SERVICES, SERVING_RUNTIMES
from ome.framework.client import Client
from ome.kubectl_ome.effective import runtime_cell
from ome.kubectl_ome.table import middle_cut
from ome.omenative import columnar

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")

SEED_TABLE = (
    "COMP     IDX/INC   PHASE   PODS    REVS          AOF   EVIDENCE\n"
    "engine   0/1       Ready   1/1/1   chat...ne-a   A--   OK\n"
)
ROW: Obj = {
    "index": 0,
    "incarnation": 1,
    "phase": "Ready",
    "runningRevision": "chat-engine-a",
    "targetRevision": "chat-engine-a",
    "podCount": 1,
    "servingPodCount": 1,
    "availablePodCount": 1,
    "admitted": True,
}
TEMPLATE: Obj = {"spec": {"containers": [{"name": "ome-container", "image": "vllm:1"}]}}


async def kubectl_ome(kubeconfig: Path, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ome.kubectl_ome.cli",
        "--kubeconfig",
        str(kubeconfig),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return int(proc.returncode or 0), out.decode(), err.decode()


async def make_service(client: Client, ns: str) -> None:
    await client.create(
        SERVING_RUNTIMES,
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "ServingRuntime",
            "metadata": {"name": "vllm", "namespace": ns},
            "spec": {
                "containers": [{"name": "ome-container", "image": "vllm:1"}],
                "engineConfig": {"annotations": {"ome.io/deploymentMode": "OMENative"}},
            },
        },
    )
    isvc = await client.create(
        INFERENCE_SERVICES,
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": "chat", "namespace": ns},
            "spec": {"runtime": {"name": "vllm", "kind": "ServingRuntime"}, "engine": {"minReplicas": 1}},
        },
    )
    url = f"http://chat-engine.{ns}.svc.cluster.local"
    isvc["status"] = {
        "observedGeneration": 1,
        "conditions": [
            {"type": "EngineReady", "status": "True", "reason": "Ready", "lastTransitionTime": _now()},
            {"type": "Ready", "status": "True", "lastTransitionTime": _now()},
        ],
        "components": {"engine": {"url": url}},
    }
    await client.update_status(INFERENCE_SERVICES, isvc)


async def make_replica(client: Client, ns: str) -> Obj:
    replica = await client.create(
        INFERENCE_REPLICAS,
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceReplica",
            "metadata": {"name": "chat-engine", "namespace": ns,
                         "annotations": {"ome.io/parent-generation": "1"}},
            "spec": {
                "component": "engine",
                "parentRef": {"name": "chat"},
                "replicas": 1,
                "runners": [{"name": "default", "size": 1, "template": TEMPLATE}],
            },
        },
    )
    replica["status"] = {
        "observedGeneration": replica["metadata"]["generation"],
        "replicas": 1,
        "readyReplicas": 1,
        "servingReplicas": 1,
        "availableReplicas": 1,
        "updatedReplicas": 1,
        "currentRevision": "chat-engine-a",
        "updateRevision": "chat-engine-a",
        "instanceStatuses": [ROW],
    }
    updated: Obj = await client.update_status(INFERENCE_REPLICAS, replica)
    return updated


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_instance_list_reads_both_encodings(client: Client, namespace: str, kubeconfig: Path) -> None:
    await make_service(client, namespace)
    replica = await make_replica(client, namespace)

    rc, out, err = await kubectl_ome(kubeconfig, "instance", "list", "chat", "-n", namespace)
    assert (rc, err) == (0, "")
    assert out == SEED_TABLE

    status = {k: v for k, v in replica["status"].items() if k != "instanceStatuses"}
    status["instanceStatusEncoding"] = "ColumnarV2"
    status["instanceStatusColumns"] = columnar.encode([columnar.canonical_row(ROW)])
    replica["status"] = status
    await client.update_status(INFERENCE_REPLICAS, replica)
    rc, out, err = await kubectl_ome(kubeconfig, "instance", "list", "chat", "-n", namespace)
    assert (rc, err, out) == (0, "", SEED_TABLE)

    rc, out, _ = await kubectl_ome(kubeconfig, "instance", "list", "chat", "-n", namespace, "-o", "json")
    assert rc == 0 and '"encoding": "ColumnarV2"' in out

    # The service moves to generation 2; the replica still reflects generation 1.
    await client.patch(INFERENCE_SERVICES, "chat", {"spec": {"engine": {"minReplicas": 2}}}, namespace)
    rc, out, _ = await kubectl_ome(kubeconfig, "instance", "list", "chat", "-n", namespace)
    assert rc == 0 and out.splitlines()[1].split()[-1] == "STALE:PARENT", out


async def test_status_and_runtime_effective(client: Client, namespace: str, kubeconfig: Path) -> None:
    await make_service(client, namespace)
    await make_replica(client, namespace)
    await client.create(
        EVENTS,
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "chat.warn", "namespace": namespace},
            "involvedObject": {
                "apiVersion": "ome.io/v1beta1",
                "kind": "InferenceService",
                "name": "chat",
                "namespace": namespace,
            },
            "type": "Warning",
            "reason": "GangSplitRisk",
            "message": "pods of Instance 0 may schedule apart; see https://example.com/x",
            "count": 2,
            "firstTimestamp": _now(),
            "lastTimestamp": _now(),
            "source": {"component": "test"},
        },
    )

    rc, out, err = await kubectl_ome(kubeconfig, "status", "chat", "-n", namespace)
    assert (rc, err) == (0, "")
    rows = [re.split(r"\s{3,}", line, maxsplit=1) for line in out.splitlines()]
    assert ["Ready", "True / Valid"] in rows
    assert ["engine", "True / Valid; Ready pods=0/0 restarts=0"] in rows
    assert ["Declared runtime", "vllm"] in rows
    assert ["Runtime active", "Reported / Available"] in rows
    assert ["Warning Inference...", "chat GangSplitRisk"] in rows

    rc, out, err = await kubectl_ome(kubeconfig, "status", "chat", "-n", namespace, "-o", "wide")
    assert rc == 0 and "[OMITTED]" in out and "https://example.com" not in out

    rc, out, err = await kubectl_ome(kubeconfig, "runtime", "effective", "chat", "-n", namespace)
    assert (rc, err) == (0, "")
    # A namespace keeps at most 20 characters of the value (runtime.md: both ends, `...`, `#` and 8 hex).
    assert f"Live      RUNTIME         {runtime_cell(f'SR/{namespace}/vllm')}\n" in out
    assert "Live      ENGINE          OMENative (ComponentAnnotation)\n" in out
    assert "Service   PIN             AutoSync/NotApplicable\n" in out


async def test_missing_service_is_a_one_line_error(namespace: str, kubeconfig: Path) -> None:
    rc, out, err = await kubectl_ome(kubeconfig, "status", "nope", "-n", namespace)
    assert (rc, out) == (1, "")
    assert err == "error: status InferenceService was not found\n"


async def test_runtime_explain_ranks_the_runtimes_for_a_model(
    client: Client, namespace: str, kubeconfig: Path, ome_crds: list[str]
) -> None:
    from ome.api.resources import BASE_MODELS

    entry = {"modelFormat": {"name": "safetensors"}, "modelFramework": {"name": "transformers"},
             "autoSelect": True}
    await client.create(BASE_MODELS, {
        "apiVersion": "ome.io/v1beta1", "kind": "BaseModel", "metadata": {"name": "tiny", "namespace": namespace},
        "spec": {"modelFormat": {"name": "safetensors"}, "modelFramework": {"name": "transformers"},
                 "storage": {"storageUri": "local:///models/tiny"}}})
    for name, spec in (("team-rt", {"supportedModelFormats": [entry]}),
                       ("off-rt", {"disabled": True, "supportedModelFormats": [entry]})):
        await client.create(SERVING_RUNTIMES, {"apiVersion": "ome.io/v1beta1", "kind": "ServingRuntime",
                                               "metadata": {"name": name, "namespace": namespace}, "spec": spec})
    code, out, err = await kubectl_ome(kubeconfig, "-n", namespace, "runtime", "explain", "--model", "tiny")
    assert code == 0, err
    rows = [line.split()[:3] for line in out.splitlines()]
    assert rows[0] == ["RUNTIME", "SCOPE", "COMPATIBLE"]
    mine = [r for r in rows[1:] if r and r[0] in ("team-rt", "off-rt")]
    assert mine == [["team-rt", "Namespaced", "Yes"], ["off-rt", "Namespaced", "No"]]
    assert "runtime is disabled" in out
    code, _, err = await kubectl_ome(kubeconfig, "-n", namespace, "runtime", "explain")
    assert code == 1 and "exactly one of --model or --isvc is required" in err
    # --with-effective (runtime.md, "Effective context"): the same table, then the context of a service
    # that names no runtime, so the CLI selects one the way OME does.
    await client.create(INFERENCE_SERVICES, {
        "apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "tiny-svc"},
        "spec": {"model": {"name": "tiny", "kind": "BaseModel"}, "engine": {}}}, namespace)
    code, out, err = await kubectl_ome(kubeconfig, "-n", namespace, "runtime", "explain", "--isvc", "tiny-svc",
                                       "--with-effective")
    assert (code, err) == (0, ""), err
    table, context = out.split("\n\nEffective context (separate observation; selector verdict unchanged):\n")
    assert [r for r in (line.split()[:3] for line in table.splitlines()) if r and r[0] == "team-rt"] == [
        ["team-rt", "Namespaced", "Yes"]]
    lines = context.splitlines()
    assert [lines[i] for i in (0, 1, 3)] == [
        "SCOPE     FIELD           VALUE", "Service   SELECTION       Selected", "Source    INHERITANCE     Observed"]
    # A runtime identity past 54 characters (this test's namespace is long) keeps both ends.
    assert lines[2] == "Service   SOURCE          " + middle_cut(f"SR/{namespace}/team-rt", 54)
