"""`wait` reports against the docs' examples (golden files): each predicate's rows, in the documented
order, and the WaitReport JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ome.framework import errors
from ome.kubectl_ome import cmd_wait
from ome.kubectl_ome.failures import Unmet
from tests.unit.kubectl_ome.fakes import make_ctx
from tests.unit.kubectl_ome.fixtures import cluster, isvc, parse, replica

GOLDEN = Path(__file__).parent / "golden"
MIGRATION = "12345678-1234-4234-8234-123456789abc"
SYNC = "123e4567-e89b-42d3-a456-426614174000"


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Elapsed milliseconds read 0, as in the docs' examples (only for waits that match on the first read)."""
    monkeypatch.setattr(cmd_wait, "clock", lambda: 100.0)


def ready_service() -> dict[str, Any]:
    service = isvc()
    service["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-09-28T14:00:00Z"}]
    return service


async def run(service: dict[str, Any], ir: dict[str, Any] | None, *argv: str, name: str = "chat") -> str:
    ctx, _, _ = make_ctx(cluster(service, ir))
    args = parse("wait", name, "-n", "prod", *argv)
    return str(await args.handler(ctx, args))


@pytest.mark.usefixtures("frozen_clock")
async def test_condition_ready_table_and_json() -> None:
    assert await run(ready_service(), None, "--for=condition=Ready", "--timeout=30m") == (
        GOLDEN / "wait_ready.txt").read_text()
    out = await run(ready_service(), None, "--for=condition=Ready", "-o", "json")
    assert json.loads(out) == json.loads((GOLDEN / "wait_ready.json").read_text())


@pytest.mark.usefixtures("frozen_clock")
async def test_replica_predicates_match_the_docs() -> None:
    ir = replica(readyReplicas=2)
    assert await run(isvc(), ir, "--for=replicas=ready", "--component=engine", "--replicas=2", "-o", "wide") == (
        GOLDEN / "wait_replicas_ready_wide.txt").read_text()
    four = replica(replicas=4, readyReplicas=3)
    four["spec"]["replicas"] = 4
    assert await run(isvc(), four, "--for=replicas=current", "--component=engine", "--replicas=4") == (
        GOLDEN / "wait_replicas_current.txt").read_text()
    assert await run(isvc(), replica(retryBlocks=[]), "--for=held-revision=unheld", "--component=engine",
                     "--revision=chat-engine-7f9c4d2b", "--ir-name=chat-engine", "--ir-uid=uid-ir") == (
        GOLDEN / "wait_held_revision.txt").read_text()
    done = replica(migrations=[{"requestUUID": MIGRATION, "phase": "Completed"}])
    assert await run(isvc(), done, "--for=migration=terminal", f"--request-id={MIGRATION}") == (
        GOLDEN / "wait_migration.txt").read_text()


@pytest.mark.usefixtures("frozen_clock")
async def test_runtime_sync_matches_the_docs() -> None:
    service = isvc()
    service["spec"]["runtime"]["autoSync"] = False
    service["metadata"]["annotations"]["ome.io/runtime-sync"] = f"cli-runtime-sync-{SYNC}"
    service["status"]["lastRuntimeSyncToken"] = f"cli-runtime-sync-{SYNC}"
    assert await run(service, None, "--for=runtime-sync=acknowledged", f"--request-id={SYNC}") == (
        GOLDEN / "wait_runtime_sync.txt").read_text()


async def test_unmet_wait_says_requested_condition_unmet() -> None:
    with pytest.raises(Unmet) as caught:
        await run(isvc(), None, "--for=condition=Ready", "-o", "json", name="nope")
    assert caught.value.message == "RequestedConditionUnmet"
    content = json.loads(caught.value.output)["content"]
    assert (content["outcome"], content["reason"]) == ("NotFound", "PredicateUnmet")


class _Failing:
    """A client whose every GET answers `error`."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        raise self.error


@pytest.mark.parametrize(
    ("error", "operator"),
    [
        (errors.NotFound(404, "NotFound", 'deployments.apps "ome-controller-manager" not found'),
         "unknown (get deployments.apps ome/ome-controller-manager: NotFound)"),
        (errors.NotFound(404, "NotFound", "404 page not found"),
         "unknown (get deployments.apps: OMEAPIMissing (install OME first))"),
        (errors.ServerError(503, "ServiceUnavailable", "down"),
         "unknown (get deployments.apps ome/ome-controller-manager: ServiceUnavailable)"),
        (errors.Forbidden(403, "Forbidden", "no"), "unknown (get deployments.apps ome/ome-controller-manager: Forbidden)"),
    ],
)
async def test_version_operator_reasons(error: Exception, operator: str) -> None:
    import argparse

    from ome.kubectl_ome import cmd_misc

    ctx, _, _ = make_ctx(_Failing(error))  # type: ignore[arg-type]
    out = await cmd_misc.version(ctx, argparse.Namespace(ome_namespace="ome"))
    assert out.endswith(f"Operator Version: {operator}\n")
