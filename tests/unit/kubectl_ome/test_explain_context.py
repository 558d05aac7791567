"""`runtime explain --isvc NAME --with-effective` (reference/kubectl-ome/runtime.md, "Effective context"): the
documented example, the verdicts left as they are, and each way the context degrades."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ome.api.resources import (
    BASE_MODELS,
    CLUSTER_SERVING_RUNTIMES,
    CONTROLLER_REVISIONS,
    INFERENCE_SERVICES,
    SERVING_RUNTIMES,
)
from ome.framework.resources import Resource
from ome.kubectl_ome import explain, fetch
from ome.kubectl_ome.failures import CliError
from ome.resolution import runtime_revisions as rr
from ome.resolution.runtime_inheritance import merged_spec
from tests.unit.kubectl_ome.fakes import FakeClient, make_ctx
from tests.unit.kubectl_ome.fixtures import parse
from tests.unit.kubectl_ome.test_effective import GOLDEN

Obj = dict[str, Any]
MODEL = "llama-3-2-3b-instruct"
ENTRY: Obj = {"modelFormat": {"name": "safetensors"}, "modelFramework": {"name": "transformers"}, "autoSelect": True}
BASE_SPEC: Obj = {"containers": [{"name": "ome-container", "image": "vllm:0.9"}],
                  "supportedModelFormats": [{**ENTRY, "autoSelect": False}]}
LLAMA_SPEC: Obj = {"containers": [{"name": "ome-container", "image": "vllm:0.10"}],
                   "supportedModelFormats": [ENTRY]}
HEADING = "Effective context (separate observation; selector verdict unchanged):\n"


def docs_cluster(runtime: Obj | None = None) -> tuple[FakeClient, str, str]:
    """The docs' team-a: `llama-chat` names `vllm-llama` (inheriting from `vllm-base`) with a managed pin
    to a revision taken before `vllm-llama` changed; returns the client and the live and pinned hashes."""
    client = FakeClient()
    client.put(BASE_MODELS, {"metadata": {"name": MODEL, "namespace": "team-a"},
                             "spec": {"modelFormat": {"name": "safetensors"},
                                      "modelFramework": {"name": "transformers"}}})
    client.put(CLUSTER_SERVING_RUNTIMES, {"metadata": {"name": "vllm-base"}, "spec": copy.deepcopy(BASE_SPEC)})
    client.put(CLUSTER_SERVING_RUNTIMES, {"metadata": {"name": "vllm-llama",
                                                       "annotations": {"ome.io/inherit-from": "vllm-base"}},
                                          "spec": copy.deepcopy(LLAMA_SPEC)})
    pinned = {**BASE_SPEC, "engineConfig": {}}
    active = rr.spec_hash(pinned)
    client.put(CONTROLLER_REVISIONS, {"metadata": {"name": f"cr-vllm-llama-{active}", "namespace": "ome",
                                                   "labels": {rr.REVISION_HASH_LABEL: active}},
                                      "data": pinned})
    drifted = [{"type": "RuntimeDrifted", "status": "True", "reason": "RevisionMismatch"}]
    client.put(INFERENCE_SERVICES, {
        "metadata": {"name": "llama-chat", "namespace": "team-a", "generation": 3},
        "spec": {"model": {"name": MODEL},
                 "runtime": runtime if runtime is not None else {"name": "vllm-llama", "autoSync": False},
                 "engine": {}},
        "status": {"observedGeneration": 3, "pinnedRevisionName": f"cr-vllm-llama-{active}",
                   "conditions": drifted}})
    return client, rr.spec_hash(merged_spec([BASE_SPEC, LLAMA_SPEC])), active


async def run(client: FakeClient, *argv: str) -> tuple[str, str]:
    ctx, err, _ = make_ctx(client, namespace="team-a")
    args = parse("runtime", "explain", *argv)
    return str(await args.handler(ctx, args)), err.getvalue()


def context_of(out: str) -> list[tuple[str, ...]]:
    body = out.split(HEADING, 1)[1].splitlines()[1:]
    return [tuple(line.split(None, 2)) for line in body]


async def test_the_docs_example_appends_the_context_after_the_unchanged_table() -> None:
    client, live, active = docs_cluster()
    plain, plain_err = await run(client, "--isvc", "llama-chat")
    out, err = await run(client, "--isvc", "llama-chat", "--with-effective")
    expected = (GOLDEN / "runtime_explain_effective.txt").read_text().format(live=live, active=active)
    # "The command prints the same table, then a blank line and this".
    assert out == f"{plain}\n{expected}"
    assert err == plain_err == f"{explain.EXPLICIT_NOTE}\n"
    assert plain.splitlines()[1].split() == ["vllm-llama", "Cluster", "Yes", "1", "2", "-"]
    assert all(len(line) <= 80 for line in out.splitlines())


async def test_with_effective_needs_isvc() -> None:
    client, _, _ = docs_cluster()
    with pytest.raises(CliError, match="^--with-effective requires --isvc$"):
        await run(client, "--model", MODEL, "--with-effective")
    with pytest.raises(CliError, match="^exactly one of --model or --isvc is required$"):
        await run(client, "--with-effective")


async def test_a_service_naming_no_runtime_gets_the_one_selection_picks() -> None:
    client, live, _ = docs_cluster(runtime={})
    out, err = await run(client, "--isvc", "llama-chat", "--with-effective")
    assert err == ""
    rows = context_of(out)
    assert rows[:6] == [("Service", "SELECTION", "Selected"), ("Service", "SOURCE", "CSR/vllm-llama"),
                        ("Source", "INHERITANCE", "Observed"), ("Source", "ROOT-FIRST", "CSR/vllm-base"),
                        ("Source", "ROOT-FIRST", "CSR/vllm-llama"),
                        ("Service", "CAVEAT", "Independent snapshot; not rollout convergence")]
    assert ("Live", "HASH", live) in rows
    assert ("Service", "PIN", "AutoSync/NotApplicable") in rows


class EndlessPages(FakeClient):
    """A ServingRuntime list that always says more remain, as a namespace with too many would."""

    def __init__(self) -> None:
        super().__init__()
        self.pages = 0

    async def list_page(self, res: Resource, namespace: str | None = None, *, limit: int = 500,
                        continue_token: str | None = None, **kwargs: Any) -> Obj:
        if res is not SERVING_RUNTIMES:
            return await super().list_page(res, namespace, limit=limit, continue_token=continue_token, **kwargs)
        self.pages += 1
        return {"metadata": {"continue": f"next-{self.pages}"},
                "items": [{"metadata": {"name": f"page-{self.pages}", "namespace": namespace}}]}


async def test_a_selection_past_its_two_page_budget_leaves_live_and_inheritance_unavailable() -> None:
    client = EndlessPages()
    source, _, _ = docs_cluster(runtime={})
    client.objects = source.objects
    plain, _ = await run(client, "--isvc", "llama-chat")
    out, _ = await run(client, "--isvc", "llama-chat", "--with-effective")
    assert out.startswith(plain)  # the selector verdict is unchanged
    assert client.pages == 2
    rows = context_of(out)
    assert ("Source", "INHERITANCE", "Unavailable") in rows
    assert ("Live", "STATE", "Unavailable") in rows
    assert ("Service", "ISSUE", "InheritanceUnavailable") in rows
    assert ("Service", "ISSUE", "LiveRuntimeUnavailable") in rows
    assert "next-1" not in out


@pytest.mark.parametrize(("change", "reason"), [
    ("missing-parent", "NotFound"), ("cycle", "Cycle"), ("missing-runtime", "NotFound")])
async def test_an_unobserved_chain_says_why(change: str, reason: str) -> None:
    client, _, _ = docs_cluster()
    if change == "missing-parent":
        del client.objects[("clusterservingruntimes", None, "vllm-base")]
    elif change == "cycle":
        client.objects[("clusterservingruntimes", None, "vllm-base")]["metadata"]["annotations"] = {
            "ome.io/inherit-from": "vllm-llama"}
    else:
        del client.objects[("clusterservingruntimes", None, "vllm-llama")]
    rows = context_of((await run(client, "--isvc", "llama-chat", "--with-effective"))[0])
    assert rows[2:4] == [("Source", "INHERITANCE", "Unavailable"), ("Source", "REASON", reason)]
    assert not any(r[1] == "ROOT-FIRST" for r in rows)
    assert ("Service", "ISSUE", "InheritanceUnavailable") in rows


async def test_a_context_that_cannot_be_collected_is_two_rows_and_no_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client, _, _ = docs_cluster()
    plain, _ = await run(client, "--isvc", "llama-chat")

    async def broken(*_: Any) -> Any:
        raise OSError("private-registry-token=do-not-print")

    monkeypatch.setattr(fetch, "read_live_runtime", broken)
    out, _ = await run(client, "--isvc", "llama-chat", "--with-effective")
    assert out == (f"{plain}\n{HEADING}SCOPE     FIELD      VALUE\nService   EVIDENCE   Unavailable\n"
                   "Service   CAVEAT     Selector verdict above is unchanged\n")
    assert "do-not-print" not in out


async def test_no_runtimes_at_all_still_prints_the_context() -> None:
    client, _, _ = docs_cluster()
    for key in [k for k in client.objects if k[0] == "clusterservingruntimes"]:
        del client.objects[key]
    out, err = await run(client, "--isvc", "llama-chat", "--with-effective")
    assert err == f"{explain.EXPLICIT_NOTE}\nNo serving runtimes found for selector.\n"
    assert out.startswith(f"\n{HEADING}")  # the blank line before the context stays
    rows = context_of(out)
    assert rows[:4] == [("Service", "SELECTION", "Explicit"), ("Service", "SOURCE", "SR/team-a/vllm-llama"),
                        ("Source", "INHERITANCE", "Unavailable"), ("Source", "REASON", "NotFound")]


async def test_a_selection_that_finds_nothing_has_no_source_and_long_identities_keep_both_ends() -> None:
    client, _, _ = docs_cluster(runtime={})
    for key in [k for k in client.objects if k[0] == "clusterservingruntimes"]:
        del client.objects[key]
    out, err = await run(client, "--isvc", "llama-chat", "--with-effective")
    assert err == "No serving runtimes found for selector.\n"
    assert context_of(out)[:2] == [("Service", "SELECTION", "Selected"), ("Service", "SOURCE", "-")]
    long_name = "vllm-" + "x" * 60 + "-llama"
    client, _, _ = docs_cluster(runtime={"name": long_name})
    runtime = client.objects.pop(("clusterservingruntimes", None, "vllm-llama"))
    runtime["metadata"]["name"] = long_name
    client.put(CLUSTER_SERVING_RUNTIMES, runtime)
    rows = context_of((await run(client, "--isvc", "llama-chat", "--with-effective"))[0])
    cut = f"CSR/{long_name}"[:26] + "..." + f"CSR/{long_name}"[-25:]
    assert rows[1] == ("Service", "SOURCE", cut) and ("Source", "ROOT-FIRST", cut) in rows
    assert len(cut) == 54
