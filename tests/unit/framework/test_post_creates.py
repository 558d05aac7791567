"""Creates by POST and the move of their fields before a first apply (post_creates.py), and converge's use
of it (ome.controllers.inferenceservice.converge)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ome.controllers.inferenceservice import converge
from ome.framework import errors, resources
from ome.framework.post_creates import MOVE_ATTEMPTS, USER_AGENT_MANAGER, PostCreates

Obj = dict[str, Any]
MANAGER = "ome-inferenceservice-controller"
DEPLOYMENTS = resources.DEPLOYMENTS


class Api:
    """Records every call; keeps objects with the managed fields a real apiserver would write (only the
    entries, coarse: a POST gives its manager an Update entry of the body's top-level fields, an apply
    an Apply entry)."""

    def __init__(self) -> None:
        self.objects: dict[str, Obj] = {}
        self.calls: list[tuple[str, str]] = []
        self.rv = 10

    def _stored(self, obj: Obj, entries: list[Obj]) -> Obj:
        self.rv += 1
        stored = copy.deepcopy(obj)
        meta = stored["metadata"]
        meta.setdefault("uid", f"uid-{meta['name']}")
        meta["resourceVersion"] = str(self.rv)
        meta["managedFields"] = entries
        self.objects[meta["name"]] = stored
        return copy.deepcopy(stored)

    async def create(self, res: Any, obj: Obj, namespace: str | None = None, *,
                     field_manager: str | None = None) -> Obj:
        self.calls.append(("create", field_manager or ""))
        if obj["metadata"]["name"] in self.objects:
            raise errors.AlreadyExists(409, "AlreadyExists", "exists")
        fields = {f"f:{k}": {} for k in obj.get("spec") or {}} | {"f:spec": {"f:replicas": {}}}
        return self._stored(obj, [{"manager": field_manager or USER_AGENT_MANAGER, "operation": "Update",
                                   "apiVersion": "apps/v1", "fieldsType": "FieldsV1", "fieldsV1": fields}])

    async def get(self, res: Any, name: str, namespace: str | None = None) -> Obj:
        self.calls.append(("get", name))
        if name not in self.objects:
            raise errors.NotFound(404, "NotFound", name)
        return copy.deepcopy(self.objects[name])

    async def patch(self, res: Any, name: str, patch: Obj, namespace: str | None = None, *,
                    field_manager: str | None = None) -> Obj:
        self.calls.append(("patch", name))
        live = self.objects[name]
        if patch["metadata"]["resourceVersion"] != live["metadata"]["resourceVersion"]:
            raise errors.Conflict(409, "Conflict", "the object has been modified")
        return self._stored(live, patch["metadata"]["managedFields"])

    async def apply(self, res: Any, obj: Obj, *, field_manager: str, force: bool = True,
                    subresource: str | None = None) -> Obj:
        self.calls.append(("apply", field_manager))
        sent = obj["metadata"].get("resourceVersion")
        live = self.objects.get(obj["metadata"]["name"])
        if sent and (live is None or sent != live["metadata"]["resourceVersion"]):
            raise errors.Conflict(409, "Conflict", "the object has been modified")
        kept = [e for e in (live or {}).get("metadata", {}).get("managedFields", [])
                if (e["manager"], e["operation"]) != (field_manager, "Apply")]
        mine = {"manager": field_manager, "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {}}}
        uid = (live or {}).get("metadata", {}).get("uid")
        body = copy.deepcopy(obj)
        if uid:
            body["metadata"]["uid"] = uid
        return self._stored(body, [*kept, mine])

    async def delete(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("not deleted here")

    def entries(self, name: str) -> list[tuple[str, str]]:
        return [(e["manager"], e["operation"]) for e in self.objects[name]["metadata"]["managedFields"]]


def deployment(name: str = "svc-engine", **spec: Any) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "engine:1"}]}}, **spec}}


def cached(api: Api, name: str = "svc-engine") -> Obj:
    """What the informer keeps: the object without its managed fields."""
    obj = copy.deepcopy(api.objects[name])
    obj["metadata"].pop("managedFields")
    return obj


async def test_a_create_is_a_post_under_the_field_manager() -> None:
    api = Api()
    posts = PostCreates(api)
    assert await converge.converge(api, deployment(), None, posts=posts)
    assert api.calls == [("create", MANAGER)]
    assert api.entries("svc-engine") == [(MANAGER, "Update")]


async def test_the_first_apply_that_drops_a_posted_field_moves_the_fields_then_applies() -> None:
    api = Api()
    posts = PostCreates(api)
    await converge.converge(api, deployment(paused=True), None, posts=posts)
    api.calls.clear()
    dropped = deployment(minReadySeconds=5)  # `paused`, which the POST set, is gone
    assert await converge.converge(api, dropped, cached(api), posts=posts)
    assert api.calls == [("get", "svc-engine"), ("patch", "svc-engine"), ("apply", MANAGER)]
    assert api.entries("svc-engine") == [(MANAGER, "Apply")]
    assert posts.is_clean("uid-svc-engine") and not posts.is_posted("uid-svc-engine")
    # the next change goes straight to the apply: the object is known to hold no Update entry of ours
    api.calls.clear()
    assert await converge.converge(api, deployment(minReadySeconds=9), cached(api), posts=posts)
    assert api.calls == [("apply", MANAGER)]


async def test_an_apply_that_sets_every_posted_field_is_sent_without_the_move() -> None:
    api = Api()
    posts = PostCreates(api)
    await converge.converge(api, deployment(paused=True), None, posts=posts)
    assert posts.is_posted("uid-svc-engine")
    api.calls.clear()
    changed = deployment(paused=False, minReadySeconds=5)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "engine:2"
    assert await converge.converge(api, changed, cached(api), posts=posts)
    assert api.calls == [("apply", MANAGER)]
    assert api.entries("svc-engine") == [(MANAGER, "Update"), (MANAGER, "Apply")]  # both own the POSTed fields
    assert posts.is_posted("uid-svc-engine")
    # a later change that drops a field the POST set moves them then
    api.calls.clear()
    assert await converge.converge(api, deployment(minReadySeconds=5), cached(api), posts=posts)
    assert api.calls == [("get", "svc-engine"), ("patch", "svc-engine"), ("apply", MANAGER)]
    assert api.entries("svc-engine") == [(MANAGER, "Apply")]


async def test_an_owner_reference_the_body_does_not_send_is_moved_first() -> None:
    api = Api()
    posts = PostCreates(api)
    owner = {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "name": "svc", "uid": "u1",
             "controller": True, "blockOwnerDeletion": True}
    first = deployment()
    first["metadata"]["ownerReferences"] = [owner]
    await converge.converge(api, first, None, posts=posts)
    api.calls.clear()
    successor = deployment(minReadySeconds=1)
    successor["metadata"]["ownerReferences"] = [{**owner, "uid": "u2"}]
    await converge.converge(api, successor, cached(api), posts=posts)
    assert api.calls == [("get", "svc-engine"), ("patch", "svc-engine"), ("apply", MANAGER)]


async def test_a_restarted_manager_moves_before_its_first_apply() -> None:
    api = Api()
    await converge.converge(api, deployment(), None, posts=PostCreates(api))
    api.calls.clear()
    await converge.converge(api, deployment(minReadySeconds=1), cached(api), posts=PostCreates(api))
    assert api.calls == [("get", "svc-engine"), ("patch", "svc-engine"), ("apply", MANAGER)]


async def test_the_move_leaves_replicas_out_unless_the_body_sends_them() -> None:
    api = Api()
    posts = PostCreates(api)
    await posts.create(DEPLOYMENTS, deployment(paused=True), MANAGER)  # the apply drops `paused`
    patched: list[Obj] = []
    real_patch = api.patch

    async def patch(res: Any, name: str, body: Obj, namespace: str | None = None, **kw: Any) -> Obj:
        patched.append(body)
        return await real_patch(res, name, body, namespace, **kw)

    api.patch = patch  # type: ignore[method-assign]
    await posts.before_apply(DEPLOYMENTS, deployment(), cached(api), MANAGER)
    (fields,) = [e["fieldsV1"] for e in patched[0]["metadata"]["managedFields"]]
    assert "f:replicas" not in fields.get("f:spec", {})

    api2 = Api()
    posts2 = PostCreates(api2)
    await posts2.create(DEPLOYMENTS, deployment(replicas=2, paused=True), MANAGER)
    await posts2.before_apply(DEPLOYMENTS, deployment(replicas=2), cached(api2), MANAGER)
    (entry,) = api2.objects["svc-engine"]["metadata"]["managedFields"]
    assert "f:replicas" in entry["fieldsV1"]["f:spec"]


async def test_a_precondition_the_body_carries_moves_to_the_version_the_move_wrote() -> None:
    api = Api()
    posts = PostCreates(api)
    await posts.create(DEPLOYMENTS, deployment(paused=True), MANAGER)  # the apply drops `paused`
    live = cached(api)
    body = deployment()
    body["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
    sent = await posts.before_apply(DEPLOYMENTS, body, live, MANAGER)
    assert sent["metadata"]["resourceVersion"] == api.objects["svc-engine"]["metadata"]["resourceVersion"]
    assert sent["metadata"]["resourceVersion"] != live["metadata"]["resourceVersion"]
    await api.apply(DEPLOYMENTS, sent, field_manager=MANAGER)  # accepted: the version is current


async def test_a_move_refused_every_time_fails_with_conflict() -> None:
    api = Api()
    posts = PostCreates(api)
    await posts.create(DEPLOYMENTS, deployment(paused=True), MANAGER)  # the apply drops `paused`
    real_get = api.get

    async def stale_get(res: Any, name: str, namespace: str | None = None) -> Obj:
        obj = await real_get(res, name, namespace)
        api.rv += 1
        api.objects[name]["metadata"]["resourceVersion"] = str(api.rv)  # someone writes after every read
        return obj

    api.get = stale_get  # type: ignore[method-assign]
    with pytest.raises(errors.Conflict):
        await posts.before_apply(DEPLOYMENTS, deployment(), cached(api), MANAGER)
    assert [c[0] for c in api.calls].count("patch") == MOVE_ATTEMPTS
    assert not posts.is_clean("uid-svc-engine")


async def test_an_object_created_by_apply_is_read_once_and_not_patched() -> None:
    api = Api()
    posts = PostCreates(api)
    await api.apply(DEPLOYMENTS, deployment(), field_manager=MANAGER)  # created by an earlier version
    api.calls.clear()
    await converge.converge(api, deployment(minReadySeconds=1), cached(api), posts=posts)
    assert api.calls == [("get", "svc-engine"), ("apply", MANAGER)]
    api.calls.clear()
    await converge.converge(api, deployment(minReadySeconds=2), cached(api), posts=posts)
    assert api.calls == [("apply", MANAGER)]


async def test_a_post_that_finds_the_object_applies_instead() -> None:
    api = Api()
    posts = PostCreates(api)
    await posts.create(DEPLOYMENTS, deployment(), "someone-else")
    api.calls.clear()
    # the cache has not shown it: a create, refused, then the apply path with its read
    assert await converge.converge(api, deployment(), None, posts=posts)
    assert api.calls == [("create", MANAGER), ("get", "svc-engine"), ("apply", MANAGER)]


async def test_the_user_agent_entry_is_moved_when_named() -> None:
    api = Api()
    posts = PostCreates(api, also=(USER_AGENT_MANAGER,))
    await api.create(DEPLOYMENTS, deployment(), "ns")  # an earlier POST without a field manager
    await posts.before_apply(DEPLOYMENTS, deployment(), cached(api), MANAGER)
    assert api.entries("svc-engine") == [(MANAGER, "Apply")]


async def test_the_posted_map_is_bounded() -> None:
    api = Api()
    posts = PostCreates(api, max_entries=2)
    for name in ("a", "b", "c"):
        await posts.create(DEPLOYMENTS, deployment(name), MANAGER)
    assert not posts.is_posted("uid-a") and posts.is_posted("uid-b") and posts.is_posted("uid-c")


def test_the_clean_set_is_bounded() -> None:
    posts = PostCreates(Api(), max_entries=2)
    for uid in ("a", "b", "c"):
        posts.applied({"metadata": {"uid": uid, "managedFields": []}}, MANAGER)
    assert len(posts) == 2 and not posts.is_clean("a") and posts.is_clean("c")
    posts.applied({"metadata": {"uid": "c", "managedFields": [
        {"manager": MANAGER, "operation": "Update", "fieldsV1": {}}]}}, MANAGER)
    assert not posts.is_clean("c")  # an Update entry of ours came back: read before the next apply


async def test_a_write_between_the_read_and_the_move_reads_again() -> None:
    api = Api()
    posts = PostCreates(api)
    await posts.create(DEPLOYMENTS, deployment(paused=True), MANAGER)  # the apply drops `paused`
    real_get, reads = api.get, []

    async def get_then_status_write(res: Any, name: str, namespace: str | None = None) -> Obj:
        obj = await real_get(res, name, namespace)
        reads.append(obj["metadata"]["resourceVersion"])
        if len(reads) == 1:
            api.rv += 1
            api.objects[name]["metadata"]["resourceVersion"] = str(api.rv)  # the workload's status moved
        return obj

    api.get = get_then_status_write  # type: ignore[method-assign]
    live = cached(api)
    body = deployment()
    body["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
    sent = await posts.before_apply(DEPLOYMENTS, body, live, MANAGER)
    assert len(reads) == 2 and api.entries("svc-engine") == [(MANAGER, "Apply")]
    # the body's precondition is older than what the move was made over: left to fail the apply
    assert sent["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
