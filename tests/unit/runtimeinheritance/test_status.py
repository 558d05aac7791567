"""InheritanceReady and status.inheritanceChain against concepts/runtimes/runtime-inheritance.md (v1.3),
"When a chain breaks" and "What admission checks"."""

from __future__ import annotations

import copy
from typing import Any

from ome.api import resources
from ome.controllers.runtimeinheritance import setup
from ome.controllers.runtimeinheritance.reconciler import InheritanceStatusReconciler
from ome.framework.reconcile import Request
from ome.framework.resources import Resource
from ome.resolution import runtime_inheritance as inheritance

Obj = dict[str, Any]


def csr(name: str, parent: str = "", **status: Any) -> Obj:
    annotations = {inheritance.INHERIT_FROM: parent} if parent else {}
    obj: Obj = {"apiVersion": "ome.io/v1beta1", "kind": "ClusterServingRuntime",
                "metadata": {"name": name, "annotations": annotations, "generation": 1, "uid": name}, "spec": {}}
    if status:
        obj["status"] = status
    return obj


def sr(name: str, namespace: str, parent: str = "") -> Obj:
    obj = csr(name, parent)
    obj["kind"] = "ServingRuntime"
    obj["metadata"]["namespace"] = namespace
    return obj


class World:
    def __init__(self, *objs: Obj) -> None:
        self.objects: dict[tuple[str, str | None, str], Obj] = {}
        self.patches: list[Obj] = []
        self.events: list[tuple[str, str, str]] = []
        for obj in objs:
            self.add(obj)

    def add(self, obj: Obj) -> None:
        self.objects[(obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])] = obj

    def remove(self, kind: str, name: str, namespace: str | None = None) -> None:
        del self.objects[(kind, namespace, name)]

    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        return self.objects.get((res.kind, namespace, name))

    def list(self, res: Resource, namespace: str | None = None, **_: Any) -> list[Obj]:
        return [o for (kind, _ns, _n), o in self.objects.items() if kind == res.kind]

    async def patch(self, res: Resource, name: str, patch: Obj, namespace: str | None = None, *,
                    subresource: str | None = None) -> Obj:
        self.patches.append(patch)
        obj = copy.deepcopy(self.objects[(res.kind, namespace, name)])
        obj["status"] = {**(obj.get("status") or {}), **patch["status"]}
        self.add(obj)
        return obj

    def event(self, obj: Obj, type_: Any, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))


def reconciler(world: World) -> InheritanceStatusReconciler:
    return InheritanceStatusReconciler(world, world, world, clock=lambda: "2026-01-01T00:00:00Z")


def ready(obj: Obj) -> Obj:
    return next(c for c in obj["status"]["conditions"] if c["type"] == "InheritanceReady")


async def test_a_resolved_chain_is_listed_root_first_with_inheritance_ready_true() -> None:
    """`sglang-llama-3-2-3b   sglang-profile,sglang-llama-3-2-3b   True    Resolved`"""
    world = World(csr("sglang-profile"), sr("sglang-llama-3-2-3b", "llama-demo", "sglang-profile"))
    await reconciler(world).reconcile(Request("llama-demo", "sglang-llama-3-2-3b"))
    obj = world.objects[("ServingRuntime", "llama-demo", "sglang-llama-3-2-3b")]
    assert obj["status"]["inheritanceChain"] == ["sglang-profile", "sglang-llama-3-2-3b"]
    assert (ready(obj)["status"], ready(obj)["reason"]) == ("True", "Resolved")
    world.patches.clear()
    await reconciler(world).reconcile(Request("llama-demo", "sglang-llama-3-2-3b"))
    assert world.patches == []  # nothing changed: no write


async def test_a_deleted_parent_turns_it_false_keeps_the_last_chain_and_records_a_warning() -> None:
    """"If you delete `sglang-profile` ... `InheritanceReady` turns `False`, with a reason from What admission
    checks ... OME also records a warning event on the runtime, and `inheritanceChain` keeps the last chain
    that resolved. When you create the missing parent, the runtimes below it return to `Resolved`." """
    world = World(csr("sglang-profile"), sr("sglang-llama-3-2-3b", "llama-demo", "sglang-profile"))
    rec = reconciler(world)
    req = Request("llama-demo", "sglang-llama-3-2-3b")
    await rec.reconcile(req)
    world.remove("ClusterServingRuntime", "sglang-profile")
    await rec.reconcile(req)
    obj = world.objects[("ServingRuntime", "llama-demo", "sglang-llama-3-2-3b")]
    assert (ready(obj)["status"], ready(obj)["reason"]) == ("False", "ParentNotFound")
    message = 'inherit-from parent "sglang-profile" not found (chain so far: [sglang-llama-3-2-3b])'
    assert ready(obj)["message"] == message
    assert obj["status"]["inheritanceChain"] == ["sglang-profile", "sglang-llama-3-2-3b"]
    assert world.events == [("Warning", "ParentNotFound", message)]
    world.add(csr("sglang-profile"))
    await rec.reconcile(req)
    obj = world.objects[("ServingRuntime", "llama-demo", "sglang-llama-3-2-3b")]
    assert (ready(obj)["status"], ready(obj)["reason"]) == ("True", "Resolved")


async def test_cycles_and_depth_have_their_reasons() -> None:
    """`InheritanceCycle` for `inheritance cycle detected: [sglang-llama-3-2-3b sglang-llama-3-2-3b]`;
    `MaxDepthExceeded` for a chain of more than five."""
    world = World(csr("sglang-llama-3-2-3b", "sglang-llama-3-2-3b"),
                  *(csr(f"r{i}", f"r{i + 1}") for i in range(6)), csr("r6"))
    await reconciler(world).reconcile(Request("", "sglang-llama-3-2-3b"))
    cycle = ready(world.objects[("ClusterServingRuntime", None, "sglang-llama-3-2-3b")])
    assert (cycle["reason"], cycle["message"]) == (
        "InheritanceCycle", "inheritance cycle detected: [sglang-llama-3-2-3b sglang-llama-3-2-3b]")
    await reconciler(world).reconcile(Request("", "r0"))
    deep = ready(world.objects[("ClusterServingRuntime", None, "r0")])
    assert deep["reason"] == "MaxDepthExceeded"
    assert deep["message"].startswith("inheritance chain exceeds max depth 5")


def test_other_failures_are_resolver_error() -> None:
    assert inheritance.classify(RuntimeError("boom")) == "ResolverError"


def test_a_runtime_without_parent_lists_only_itself() -> None:
    status = inheritance.inheritance_status(csr("solo"), [inheritance.Link("ClusterServingRuntime", csr("solo"))],
                                            None, "t")
    assert status["inheritanceChain"] == ["solo"]
    assert status["conditions"][0]["message"] == "inheritance chain resolved"


def test_a_parent_event_reaches_its_whole_subtree() -> None:
    """A profile edit reaches every runtime built on it: cluster-wide for a ClusterServingRuntime, its own
    namespace for a ServingRuntime."""

    class Cache:
        def __init__(self, *objs: Obj) -> None:
            self.objs = objs

        def list(self, res: Resource, *_: Any, **__: Any) -> list[Obj]:
            return [o for o in self.objs if o["kind"] == res.kind]

    cache = Cache(csr("root"), csr("child", "root"), csr("grandchild", "child"),
                  sr("ns-grandchild", "team-a", "child"), csr("other"),
                  sr("parent", "team-a"), sr("sibling", "team-a", "parent"), sr("outsider", "team-b", "parent"))
    mapper = setup.self_and_descendants(cache, "ClusterServingRuntime")  # type: ignore[arg-type]
    assert sorted(f"{r.namespace}/{r.name}" for r in mapper(csr("root"))) == [
        "/child", "/grandchild", "/root", "team-a/ns-grandchild"]
    mapper = setup.self_and_descendants(cache, "ServingRuntime")  # type: ignore[arg-type]
    assert sorted(f"{r.namespace}/{r.name}" for r in mapper(sr("parent", "team-a"))) == [
        "team-a/parent", "team-a/sibling"]
    assert resources.SERVING_RUNTIMES.namespaced
