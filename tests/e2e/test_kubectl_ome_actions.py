"""kubectl-ome against the real control plane: every command over a served OMENative InferenceService
(the InferenceService and InferenceReplica controllers running in-process), and the guarded actions:
the preview on stderr, a confirm answered on a pseudo-terminal, --dry-run=server leaving the object as
it was, --yes, refusals (exit 1) and conflicts (exit 3). `wait` returns as soon as the condition holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import re
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ome.api import resources
from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES
from ome.controllers import inferencereplica
from ome.framework.client import Client
from ome.kubectl_ome import guarded
from ome.kubectl_ome.failures import Conflict
from ome.omenative.settings import InferenceReplicaSettings
from tests.e2e.isvc_support import catalog, condition, eventually, in_process_manager

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")
ROOT = Path(__file__).resolve().parents[2]


async def kubectl_ome(kubeconfig: Path, *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ome.kubectl_ome.cli", "--kubeconfig", str(kubeconfig), *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), 90)
    return int(proc.returncode or 0), out.decode(), err.decode()


def fields(table: str) -> dict[str, str]:
    """A FIELD/VALUE table as a dict; the first row of a repeated field wins."""
    out: dict[str, str] = {}
    for line in table.splitlines()[1:]:
        parts = re.split(r"\s{3,}", line, maxsplit=1)
        out.setdefault(parts[0], parts[1] if len(parts) > 1 else "")
    return out


@contextlib.asynccontextmanager
async def served(client: Client, namespace: str) -> AsyncIterator[str]:
    """An OMENative InferenceService served to Ready by the two controllers."""
    from ome.config.inferenceservice_config import InferenceServiceConfig
    from ome.controllers.inferenceservice import controller as isvc_controller

    async with catalog(client, namespace) as cat:
        manager = in_process_manager(client)
        isvc_controller.add_to_manager(manager, InferenceServiceConfig(), max_concurrent_reconciles=2,
                                       config_namespace="ome")
        inferencereplica.add_to_manager(manager, InferenceReplicaSettings(status_encoding="Rows"))
        task = asyncio.create_task(manager.run())
        try:
            await client.create(INFERENCE_SERVICES, {
                "apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "chat"},
                "spec": {"model": {"name": cat.model}, "runtime": {"name": cat.runtime},
                         "engine": {"minReplicas": 1, "maxReplicas": 2,
                                    "annotations": {"ome.io/deploymentMode": "OMENative"}}}}, namespace)
            yield "chat"
        finally:
            manager.stop()
            await asyncio.wait_for(task, 30)


async def test_every_read_command_over_a_served_service(client: Client, namespace: str, kubeconfig: Path) -> None:
    async with served(client, namespace) as name:
        ns = ["-n", namespace]
        # wait: the first check runs at once, then each watch event; it ends when Ready is True.
        rc, out, err = await kubectl_ome(kubeconfig, "wait", name, *ns, "--for=condition=Ready", "--timeout=120s")
        assert rc == 0, out + err
        assert fields(out)["Outcome"] == "Matched" and fields(out)["Observed Ready"] == "True"

        async def replica_ready() -> bool:
            ir = await client.get(INFERENCE_REPLICAS, f"{name}-engine", namespace)
            rows = (ir.get("status") or {}).get("instanceStatuses") or []
            return bool(rows) and rows[0].get("phase") == "Ready" and \
                ir["status"].get("observedGeneration") == ir["metadata"]["generation"]

        await eventually(replica_ready, timeout=60)

        # instance list: a Ready Instance is admitted (issue 22 item 4: it printed `---`).
        rc, out, err = await kubectl_ome(kubeconfig, "instance", "list", name, *ns)
        assert rc == 0, err
        row = out.splitlines()[1].split()
        assert row[:3] == ["engine", "0/1", "Ready"] and row[5:] == ["A--", "OK"], out

        rc, out, err = await kubectl_ome(kubeconfig, "status", name, *ns)
        assert rc == 0, err
        status = fields(out)
        assert status["Ready"] == "True / Valid" and status["Generation"].endswith("advisory Unverifiable")
        assert status["engine"] == "True / Valid; Ready pods=1/1 restarts=0"
        assert status["Pod observation"] == "Reported count=1 truncated=false"
        assert status["Runtime active"] == "Reported / Available"
        assert max(len(line) for line in out.splitlines()) <= 80

        rc, out, err = await kubectl_ome(kubeconfig, "instance", "status", name, "0", "--component", "engine", *ns)
        assert rc == 0, err
        assert fields(out)["state"] == "Reported engine[0] evidence=Reported"
        assert fields(out)["instance"].endswith("phase=Ready admitted=true")
        assert fields(out)["pod"].startswith(f"{name}-engine-0-default-0 default/Running ready=True")

        checks: list[tuple[tuple[str, ...], str]] = [
            (("instance", "retry-blocks", name, "--component", "engine"), "engine   EMPTY"),
            (("get", "isvc", name), f"{name}   "),
            (("get", "ir"), f"{name}-engine   engine      {name}  "),
            (("rollout", "status", name), "REPORTED       Succeeded"),
            (("rollout", "explain", name), "mode=Live; groups=0"),
            (("rollout", "history", name), "WINDOW"),
            (("autoscale", "explain", name), "engine"),
            (("autoscale", "status", name, "--live-scale"), "STATE"),
            (("migration", "status", name), "-/-            Empty/Current   -"),
            (("migration", "history", name), "EVID"),
            (("runtime", "effective", name), "Live      STATE"),
            (("runtime", "history", name), "WINDOW"),
        ]
        for argv, expected in checks:
            rc, out, err = await kubectl_ome(kubeconfig, *argv, *ns)
            assert rc == 0 and expected in out, (argv, out, err)

        rc, out, err = await kubectl_ome(kubeconfig, "rollout", "validate", name, *ns, "-o", "json")
        assert rc in (0, 2) and json.loads(out)["kind"] == "RolloutValidateReport", err
        rc, out, _ = await kubectl_ome(kubeconfig, "version", *ns)
        assert rc == 0 and out.startswith("Client Version: ")
        assert "Operator Version: unknown (get deployments.apps ome/ome-controller-manager: NotFound)" in out
        cat_runtime = (await client.get(INFERENCE_SERVICES, name, namespace))["spec"]["runtime"]["name"]
        rc, out, err = await kubectl_ome(kubeconfig, "runtime", "tree", cat_runtime, *ns)
        assert rc == 0 and f"InferenceService/{namespace}/{name}" in out, err
        rc, _, err = await kubectl_ome(kubeconfig, "logs", name, *ns, "--instance", "0")
        assert (rc, err) == (1, "error: --instance requires --component\n")
        rc, _, err = await kubectl_ome(kubeconfig, "logs", name, *ns, "-c", "router")
        assert rc == 1 and err.startswith(f'error: no pods found for InferenceService "{name}"')

        # Guarded actions on the served service.
        before = await client.get(INFERENCE_SERVICES, name, namespace)
        start = ("migration", "start", name, *ns, "--component", "engine", "--instance", "0", "--reason", "drain")
        rc, out, err = await kubectl_ome(kubeconfig, *start, "--dry-run=server", "--yes", "-o", "json")
        assert rc == 0, err
        result = json.loads(out)
        assert (result["dryRun"], result["accepted"], result["applied"]) == ("server", True, False)
        assert err.startswith("ALPHA guarded migration preview (not controller convergence)\n")
        assert f"Request UUID       {result['requestID']}" in err and "From node          gpu-node-0" in err
        after = await client.get(INFERENCE_SERVICES, name, namespace)
        assert not [k for k in after["metadata"].get("annotations") or {} if k.startswith("ome.io/migration")]
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

        rc, out, err = await kubectl_ome(kubeconfig, *start, stdin=b"y\n")  # a pipe is not a terminal
        assert (rc, out) == (1, "") and err.endswith("error: action not confirmed; noninteractive input requires --yes\n")

        rc, out, err = await kubectl_ome(kubeconfig, "migration", "start", name, *ns, "--component", "engine",
                                         "--instance", "7", "--yes")
        assert (rc, out) == (3, "")
        assert err == "error: migration precondition conflicts or is stale; inspect migration status and retry explicitly\n"

        rc, out, err = await kubectl_ome(kubeconfig, "rollout", "pause", name, *ns, "--yes")
        assert (rc, err) == (1, "error: action refused: no applicable active rollout or lifecycle work was observed\n")

        # The projected replica is created with its count (minReplicas), so a server dry run of a manual
        # scale passes every check and changes nothing (an unset count is refused: unit-tested).
        replicas_before = (await client.get(INFERENCE_REPLICAS, f"{name}-engine", namespace))["spec"]["replicas"]
        rc, out, err = await kubectl_ome(kubeconfig, "scale", name, *ns, "--component", "engine", "--replicas", "2",
                                         "--override-autoscaler", "--yes", "--dry-run", "server")
        assert rc == 0, err
        assert f"/scale spec.replicas    {replicas_before} -> 2" in err, err
        ir = await client.get(INFERENCE_REPLICAS, f"{name}-engine", namespace)
        assert ir["spec"]["replicas"] == replicas_before

        rc, out, err = await kubectl_ome(kubeconfig, *start, "--yes", "-o", "json")
        assert rc == 0, err
        request_id = json.loads(out)["requestID"]
        assert json.loads(out)["applied"] is True

        async def requested() -> bool:  # on the service, or already taken by the controller into the IR
            isvc = await client.get(INFERENCE_SERVICES, name, namespace)
            ir = await client.get(INFERENCE_REPLICAS, f"{name}-engine", namespace)
            held = f"ome.io/migration-request-v1-{request_id}" in (isvc["metadata"].get("annotations") or {})
            taken = any(m.get("requestUUID") == request_id for m in (ir.get("status") or {}).get("migrations") or [])
            return held or taken

        await eventually(requested, timeout=10)


def canary_service(namespace: str) -> Obj:
    steps = [{"capacity": "25%", "traffic": 10, "pause": {}}, {"capacity": "100%", "traffic": 100}]
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "chat"},
            "spec": {"runtime": {"name": "vllm", "kind": "ServingRuntime"},
                     "engine": {"minReplicas": 1, "maxReplicas": 2},
                     "rollout": {"groups": [{"components": ["engine"], "canary": {"steps": steps}}]}}}


async def hand_written(client: Client, namespace: str) -> Obj:
    """No controller runs: the test writes a canary waiting at a manual gate into the status."""
    await client.create(resources.SERVING_RUNTIMES, {
        "apiVersion": "ome.io/v1beta1", "kind": "ServingRuntime", "metadata": {"name": "vllm"},
        "spec": {"containers": [{"name": "ome-container", "image": "vllm:1"}],
                 "engineConfig": {"annotations": {"ome.io/deploymentMode": "OMENative"}}}}, namespace)
    isvc = await client.create(INFERENCE_SERVICES, canary_service(namespace), namespace)
    steps = isvc["spec"]["rollout"]["groups"][0]["canary"]["steps"]
    isvc["status"] = {
        "observedGeneration": 1,
        "conditions": [{"type": "Ready", "status": "False", "reason": "Progressing",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "components": {"engine": {"rolloutPhase": "Paused", "canary": {
            "currentStep": 0, "observedTrafficWeight": 10, "stableRevisionHash": "aaaaaaaa",
            "canaryRevisionHash": "bbbbbbbb", "stepEnteredTime": "2026-01-01T00:00:00Z"}}},
        "rollout": {"activeRun": {"runID": "chat-0123456789ab", "openedAt": "2026-01-01T00:00:00Z",
                                  "pinnedAt": "2026-01-01T00:00:00Z",
                                  "plan": {"groups": [{"source": "Inline", "portableDigest": "rp1:56fe0ddd6edd",
                                                       "group": {"components": ["engine"],
                                                                 "canary": {"steps": steps}}}]}}},
    }
    updated: Obj = await client.update_status(INFERENCE_SERVICES, isvc)
    return updated


def run_on_pty(kubeconfig: Path, argv: list[str], answer: bytes) -> tuple[int, str, str]:
    """Run kubectl-ome with a pseudo-terminal on stdin; answer once the prompt shows on stderr."""
    import subprocess

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "ome.kubectl_ome.cli", "--kubeconfig", str(kubeconfig), *argv],
                            stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    os.close(slave)
    assert proc.stderr is not None and proc.stdout is not None
    err = b""
    deadline = time.monotonic() + 60
    while b"Confirm this exact action? [y/N] " not in err:
        chunk = os.read(proc.stderr.fileno(), 4096)
        assert chunk and time.monotonic() < deadline, err.decode()
        err += chunk
    os.write(master, answer)
    out, rest = proc.communicate(timeout=60)
    os.close(master)
    return proc.returncode, out.decode(), (err + rest).decode()


async def test_rollout_actions_preview_confirm_dry_run_and_yes(
    client: Client, namespace: str, kubeconfig: Path
) -> None:
    await hand_written(client, namespace)
    ns = ["-n", namespace]

    # promote: the preview, then `y` typed at a terminal; the annotation holds the canary hash.
    rc, out, err = await asyncio.to_thread(run_on_pty, kubeconfig, ["rollout", "promote", "chat", *ns], b"y\n")
    assert rc == 0, err
    assert err.startswith("ALPHA guarded action preview (not controller convergence)\n")
    assert re.search(r"\nStep +0 of 2 \(zero-based\)\n", err) and re.search(r"\nGate +Manual\n", err)
    assert fields(out)["action"] == "rollout promote" and fields(out)["revision-hash"] == "bbbbbbbb"
    stored = await client.get(INFERENCE_SERVICES, "chat", namespace)
    assert stored["metadata"]["annotations"]["ome.io/rollout-promote"] == "bbbbbbbb"

    # A second promote while the first waits for the controller is refused.
    rc, _, err = await kubectl_ome(kubeconfig, "rollout", "promote", "chat", *ns, "--yes")
    assert (rc, err) == (1, "error: action refused: a rollout promote or rollback mailbox is present\n")

    # Declining at the terminal sends nothing.
    await client.patch(INFERENCE_SERVICES, "chat", {"metadata": {"annotations": {"ome.io/rollout-promote": None}}},
                       namespace)
    rc, out, err = await asyncio.to_thread(run_on_pty, kubeconfig, ["rollout", "pause", "chat", *ns], b"n\n")
    assert (rc, out) == (1, "") and err.endswith("error: action not confirmed; noninteractive input requires --yes\n")

    # pause --dry-run=server: the apiserver checks the guarded patch and stores nothing.
    before = await client.get(INFERENCE_SERVICES, "chat", namespace)
    rc, out, err = await kubectl_ome(kubeconfig, "rollout", "pause", "chat", *ns, "--dry-run=server", "--yes")
    assert rc == 0, err
    assert (fields(out)["accepted"], fields(out)["applied"]) == ("Yes", "No")
    assert fields(out)["message"] == "API dry-run accepted; no changes persisted."
    after = await client.get(INFERENCE_SERVICES, "chat", namespace)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "ome.io/rollout-paused" not in (after["metadata"].get("annotations") or {})

    # pause --yes, then resume --yes: the annotation comes and goes.
    rc, out, err = await kubectl_ome(kubeconfig, "rollout", "pause", "chat", *ns, "--yes", "-o", "json")
    assert rc == 0 and json.loads(out)["applied"] is True, err
    stored = await client.get(INFERENCE_SERVICES, "chat", namespace)
    assert stored["metadata"]["annotations"]["ome.io/rollout-paused"] == "true"
    rc, _, err = await kubectl_ome(kubeconfig, "rollout", "pause", "chat", *ns, "--yes")
    assert (rc, err) == (1, "error: action refused: service is already paused; freeze is preserved\n")
    rc, out, err = await kubectl_ome(kubeconfig, "rollout", "resume", "chat", *ns, "--yes")
    assert rc == 0, err
    stored = await client.get(INFERENCE_SERVICES, "chat", namespace)
    assert "ome.io/rollout-paused" not in (stored["metadata"].get("annotations") or {})

    # rollback --yes; repin without drift evidence is refused.
    rc, out, err = await kubectl_ome(kubeconfig, "rollout", "rollback", "chat", *ns, "--yes")
    assert rc == 0 and fields(out)["revision-hash"] == "bbbbbbbb", err
    rc, _, err = await kubectl_ome(kubeconfig, "rollout", "repin", "chat", *ns, "--yes")
    assert (rc, err) == (1, "error: rollout repin refused: a rollout action mailbox is already present\n")

    rc, out, _ = await kubectl_ome(kubeconfig, "rollout", "status", "chat", *ns)
    assert "STEP           -                   1/2" in out and "GATE           -                   Manual" in out


async def test_scale_server_dry_run_then_yes(client: Client, namespace: str, kubeconfig: Path) -> None:
    await client.create(resources.SERVING_RUNTIMES, {
        "apiVersion": "ome.io/v1beta1", "kind": "ServingRuntime", "metadata": {"name": "vllm"},
        "spec": {"containers": [{"name": "ome-container", "image": "vllm:1"}],
                 "engineConfig": {"annotations": {"ome.io/deploymentMode": "OMENative"}}}}, namespace)
    service = canary_service(namespace)
    del service["spec"]["rollout"]
    await client.create(INFERENCE_SERVICES, service, namespace)
    ir = await client.create(INFERENCE_REPLICAS, {
        "apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica",
        "metadata": {"name": "chat-engine", "annotations": {"ome.io/parent-generation": "1",
                                                             "ome.io/controller-write": "true"}},
        "spec": {"component": "engine", "parentRef": {"name": "chat"}, "replicas": 1,
                 "runners": [{"name": "default", "size": 1, "template": {"spec": {"containers": [
                     {"name": "ome-container", "image": "vllm:1"}]}}}]}}, namespace)
    ir["status"] = {"observedGeneration": ir["metadata"]["generation"], "replicas": 1, "readyReplicas": 1,
                    "currentRevision": "chat-engine-a", "updateRevision": "chat-engine-a",
                    "instanceStatuses": [{"index": 0, "incarnation": 1, "phase": "Ready",
                                          "runningRevision": "chat-engine-a", "podCount": 1, "admitted": True}]}
    before = await client.update_status(INFERENCE_REPLICAS, ir)
    scale = ("scale", "chat", "-n", namespace, "--component", "engine", "--replicas", "2", "--override-autoscaler",
             "--yes")
    rc, out, err = await kubectl_ome(kubeconfig, *scale, "--dry-run", "server")
    assert rc == 0, err
    assert err.startswith("ALPHA guarded scale preview (not controller convergence)\n")
    assert re.search(r"\n/scale spec.replicas +1 -> 2\n", err) and re.search(r"\nbounds +1..2\n", err)
    assert (fields(out)["applied"], fields(out)["message"]) == ("No", "API dry-run accepted; no changes persisted.")
    after = await client.get(INFERENCE_REPLICAS, "chat-engine", namespace)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    rc, out, err = await kubectl_ome(kubeconfig, *scale, "-o", "json")
    assert rc == 0, err
    result = json.loads(out)
    assert result["target"]["name"] == "chat-engine" and result["scale"]["requestedReplicas"] == 2
    assert (await client.get(INFERENCE_REPLICAS, "chat-engine", namespace))["spec"]["replicas"] == 2
    rc, out, err = await kubectl_ome(kubeconfig, "scale", "chat", "-n", namespace, "--component", "engine",
                                     "--replicas", "2", "--yes")
    assert rc == 1 and "requires --override-autoscaler --yes" in err


async def test_a_stale_resource_version_is_a_conflict_on_the_real_apiserver(
    client: Client, namespace: str
) -> None:
    isvc = await hand_written(client, namespace)
    target = guarded.check_service(isvc)
    await client.patch(INFERENCE_SERVICES, "chat", {"metadata": {"labels": {"edited": "yes"}}}, namespace)
    action = guarded.Action(name="rollout pause", resource=INFERENCE_SERVICES, target=target,
                            operations=guarded.set_annotation(isvc, "ome.io/rollout-paused", "true"),
                            follow_up="-", preview=[], conflict_message="changed")
    with pytest.raises(Conflict) as caught:
        await guarded.send(client, action, "none")
    assert caught.value.code == 3
    stored = await client.get(INFERENCE_SERVICES, "chat", namespace)
    assert "ome.io/rollout-paused" not in (stored["metadata"].get("annotations") or {})
    fresh = guarded.check_service(stored)
    action.target = fresh
    outcome = await guarded.send(client, action, "server")
    assert (outcome.accepted, outcome.applied) == (True, False)


async def test_wait_returns_as_soon_as_ready_turns_true(client: Client, namespace: str, kubeconfig: Path) -> None:
    isvc = await hand_written(client, namespace)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ome.kubectl_ome.cli", "--kubeconfig", str(kubeconfig), "wait", "chat", "-n",
        namespace, "--for=condition=Ready", "--timeout=60s", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, cwd=ROOT)
    await asyncio.sleep(10)  # let it start (a loaded machine) and open its watch: not matched yet
    assert proc.returncode is None
    isvc = await client.get(INFERENCE_SERVICES, "chat", namespace)
    isvc["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    await client.update_status(INFERENCE_SERVICES, isvc)
    changed = time.monotonic()
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    latency = time.monotonic() - changed
    assert proc.returncode == 0, err.decode()
    report = fields(out.decode())
    assert (report["Outcome"], report["Source method"]) == ("Matched", "Watch")
    assert latency < 2.0, f"wait took {latency:.2f}s after the condition held"
    assert condition(isvc, "Ready") is not None


async def test_release_held_and_runtime_sync_then_wait(client: Client, namespace: str, kubeconfig: Path) -> None:
    ns = ["-n", namespace]
    await client.create(resources.SERVING_RUNTIMES, {
        "apiVersion": "ome.io/v1beta1", "kind": "ServingRuntime", "metadata": {"name": "vllm"},
        "spec": {"containers": [{"name": "ome-container", "image": "vllm:2"}],
                 "engineConfig": {"annotations": {"ome.io/deploymentMode": "OMENative"}}}}, namespace)
    service = canary_service(namespace)
    del service["spec"]["rollout"]
    service["spec"]["runtime"]["autoSync"] = False
    isvc = await client.create(INFERENCE_SERVICES, service, namespace)
    revision = "r-" + namespace + "-vllm-00000000"
    await client.create(resources.CONTROLLER_REVISIONS, {
        "apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": 1, "data": {"spec": {}},
        "metadata": {"name": revision, "labels": {"ome.io/revision-hash": "00000000"}}}, namespace)
    isvc["status"] = {"observedGeneration": 1, "pinnedRevisionName": revision, "conditions": [
        {"type": "RuntimeDrifted", "status": "True", "reason": "RevisionMismatch",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    await client.update_status(INFERENCE_SERVICES, isvc)
    ir = await client.create(INFERENCE_REPLICAS, {
        "apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica",
        "metadata": {"name": "chat-engine", "annotations": {"ome.io/controller-write": "true",
                                                             "ome.io/parent-generation": "1"}},
        "spec": {"component": "engine", "parentRef": {"name": "chat"}, "replicas": 1,
                 "runners": [{"name": "default", "size": 1, "template": {"spec": {"containers": [
                     {"name": "ome-container", "image": "vllm:2"}]}}}]}}, namespace)
    held = {"targetRevision": "chat-engine-7f9c4d2b", "state": "Held", "attemptsStarted": 3,
            "reason": "ImagePullBackOff", "lastFailureAt": "2026-01-01T00:00:00Z"}
    ir["status"] = {"observedGeneration": ir["metadata"]["generation"], "replicas": 1, "retryBlocks": [held]}
    ir = await client.update_status(INFERENCE_REPLICAS, ir)
    rc, out, err = await kubectl_ome(kubeconfig, "instance", "retry-blocks", "chat", *ns, "--component", "engine")
    assert rc == 0 and out.splitlines()[1].split() == ["engine", "HELD", "chat-#4c6a152e", "3", "-", "YES",
                                                        "ImagePullB..."], out + err

    release = ("instance", "release-held", "chat", *ns, "--component", "engine", "--revision", "7f9c4d2b",
               "--ome-namespace", namespace)
    rc, out, err = await kubectl_ome(kubeconfig, *release, "--dry-run=server", "--yes")
    assert rc == 0, err
    assert err.startswith("HELD RELEASE PREVIEW\n") and fields(out)["applied"] == "No"
    after = await client.get(INFERENCE_REPLICAS, "chat-engine", namespace)
    assert after["metadata"]["resourceVersion"] == ir["metadata"]["resourceVersion"]
    rc, out, err = await kubectl_ome(kubeconfig, *release, "--yes", "-o", "json")
    assert rc == 0, err
    result = json.loads(out)
    assert (result["target"]["name"], result["revisionHash"]) == ("chat-engine", "7f9c4d2b")
    stored = await client.get(INFERENCE_REPLICAS, "chat-engine", namespace)
    assert stored["metadata"]["annotations"]["ome.io/release-held-revision"] == "chat-engine-7f9c4d2b"

    # wait --for=held-revision=unheld matches once the block and the mailbox are gone (the test plays OME).
    waiting = asyncio.create_task(kubectl_ome(
        kubeconfig, "wait", "chat", *ns, "--for=held-revision=unheld", "--component", "engine",
        "--revision", "chat-engine-7f9c4d2b", "--ir-name", "chat-engine", "--ir-uid", result["target"]["uid"],
        "--timeout=60s"))
    await asyncio.sleep(2)
    assert not waiting.done()
    stored["status"]["retryBlocks"] = []
    stored = await client.update_status(INFERENCE_REPLICAS, stored)
    await client.patch(INFERENCE_REPLICAS, "chat-engine",
                       {"metadata": {"annotations": {"ome.io/release-held-revision": None}}}, namespace)
    rc, out, err = await asyncio.wait_for(waiting, 60)
    assert rc == 0 and fields(out)["Outcome"] == "Matched", out + err

    # runtime sync: a managed pin that drifted from the live runtime.
    sync = ("runtime", "sync", "chat", *ns, "--ome-namespace", namespace)
    before = await client.get(INFERENCE_SERVICES, "chat", namespace)
    rc, out, err = await kubectl_ome(kubeconfig, *sync, "--dry-run=server", "--yes")
    assert rc == 0, err
    assert err.startswith("ALPHA runtime sync preview (acceptance is not convergence)\n")
    after = await client.get(INFERENCE_SERVICES, "chat", namespace)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    rc, out, err = await kubectl_ome(kubeconfig, *sync, "--yes", "-o", "json")
    assert rc == 0, err
    request_id = json.loads(out)["requestID"]
    stored = await client.get(INFERENCE_SERVICES, "chat", namespace)
    assert stored["metadata"]["annotations"]["ome.io/runtime-sync"] == f"cli-runtime-sync-{request_id}"
    rc, _, err = await kubectl_ome(kubeconfig, *sync, "--yes")
    assert (rc, err) == (1, "error: action refused: a runtime sync request is already pending\n")
