"""Children created by POST give their fields up on their first apply (framework/post_creates.py), checked
against the real apiserver's managed fields: a field later dropped from the desired object goes, a count an
autoscaler set through /scale stays, and the move is refused over a stale read."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ome.controllers.inferenceservice import converge
from ome.framework import errors, resources
from ome.framework.client import Client
from ome.framework.post_creates import USER_AGENT_MANAGER, PostCreates
from tests.e2e.isvc_support import eventually

Obj = dict[str, Any]
MANAGER = converge.FIELD_MANAGER


def deployment(namespace: str, *, env: list[str], labels: dict[str, str]) -> Obj:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "posted", "namespace": namespace, "labels": {"app": "posted", **labels}},
        "spec": {
            "selector": {"matchLabels": {"app": "posted"}},
            "template": {
                "metadata": {"labels": {"app": "posted"}},
                "spec": {"containers": [{"name": "main", "image": "engine:1",
                                         "env": [{"name": n, "value": "1"} for n in env]}]},
            },
        },
    }


def service(namespace: str, ports: list[int]) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "posted", "namespace": namespace},
            "spec": {"selector": {"app": "posted"},
                     "ports": [{"name": f"p{p}", "port": p, "targetPort": p} for p in ports]}}


def entries(obj: Obj) -> set[tuple[str, str]]:
    return {(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields") or []
            if not e.get("subresource")}


def as_cached(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    out["metadata"].pop("managedFields", None)
    return out


async def test_a_posted_deployment_drops_what_its_desired_object_dropped(client: Client, namespace: str) -> None:
    posts = PostCreates(client)
    first = deployment(namespace, env=["A", "B"], labels={"extra": "1"})
    assert await converge.converge(client, first, None, posts=posts)
    live = await client.get(resources.DEPLOYMENTS, "posted", namespace)
    assert (MANAGER, "Update") in entries(live) and (MANAGER, "Apply") not in entries(live)
    # An autoscaler scales it through /scale (the count was the apiserver's default, owned by the POST).
    await client.patch(resources.DEPLOYMENTS, "posted", {"spec": {"replicas": 3}}, namespace,
                       subresource="scale", field_manager="test-scaler")
    live = await client.get(resources.DEPLOYMENTS, "posted", namespace)

    second = deployment(namespace, env=["A"], labels={})
    assert await converge.converge(client, second, as_cached(live), posts=posts)
    after = await client.get(resources.DEPLOYMENTS, "posted", namespace)
    container = after["spec"]["template"]["spec"]["containers"][0]
    assert [e["name"] for e in container["env"]] == ["A"]
    assert "extra" not in after["metadata"]["labels"]
    assert after["spec"]["replicas"] == 3
    assert container["terminationMessagePath"] == "/dev/termination-log"  # a dropped default comes back
    assert (MANAGER, "Apply") in entries(after) and (MANAGER, "Update") not in entries(after)
    assert posts.is_clean(after["metadata"]["uid"])

    # Settled: the same desired object (rendered again: a stamp is in place) makes no write.
    again = deployment(namespace, env=["A"], labels={})
    assert not await converge.converge(client, again, as_cached(after), posts=posts)


class Counting:
    """The client, counting what it is asked to do by verb."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.calls: list[str] = []

    def __getattr__(self, verb: str) -> Any:
        call = getattr(self.client, verb)

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(verb)
            return await call(*args, **kwargs)

        return counted


async def test_an_apply_that_keeps_every_posted_field_skips_the_move(client: Client, namespace: str) -> None:
    counting = Counting(client)
    posts = PostCreates(counting)  # type: ignore[arg-type]
    await converge.converge(client, deployment(namespace, env=["A", "B"], labels={}), None, posts=posts)
    live = await client.get(resources.DEPLOYMENTS, "posted", namespace)

    # A new image, a new label and a new env var: every POSTed field is still sent.
    grown = deployment(namespace, env=["A", "B", "C"], labels={"tier": "x"})
    grown["spec"]["template"]["spec"]["containers"][0]["image"] = "engine:2"
    assert await converge.converge(client, grown, as_cached(live), posts=posts)
    assert counting.calls == ["create", "apply"]
    after = await client.get(resources.DEPLOYMENTS, "posted", namespace)
    assert {(MANAGER, "Update"), (MANAGER, "Apply")} <= entries(after)
    assert after["spec"]["template"]["spec"]["containers"][0]["image"] == "engine:2"

    # What only that apply set goes with the next apply, still without the move.
    counting.calls.clear()
    same = deployment(namespace, env=["A", "B"], labels={})
    assert await converge.converge(client, same, as_cached(after), posts=posts)
    assert counting.calls == ["apply"]
    shrunk = await client.get(resources.DEPLOYMENTS, "posted", namespace)
    container = shrunk["spec"]["template"]["spec"]["containers"][0]
    assert [e["name"] for e in container["env"]] == ["A", "B"]
    assert container["image"] == "engine:1" and "tier" not in shrunk["metadata"]["labels"]

    # What the POST set goes after the move.
    counting.calls.clear()
    assert await converge.converge(client, deployment(namespace, env=["A"], labels={}), as_cached(shrunk),
                                   posts=posts)
    assert counting.calls == ["get", "patch", "apply"]
    final = await client.get(resources.DEPLOYMENTS, "posted", namespace)
    assert [e["name"] for e in final["spec"]["template"]["spec"]["containers"][0]["env"]] == ["A"]
    assert (MANAGER, "Update") not in entries(final)


async def test_a_posted_service_drops_a_port_and_keeps_its_address(client: Client, namespace: str) -> None:
    posts = PostCreates(client)
    await converge.converge(client, service(namespace, [80, 81]), None, posts=posts)
    live = await client.get(resources.SERVICES, "posted", namespace)
    await converge.converge(client, service(namespace, [80]), as_cached(live), posts=posts)
    after = await client.get(resources.SERVICES, "posted", namespace)
    assert [p["port"] for p in after["spec"]["ports"]] == [80]
    assert after["spec"]["clusterIP"] == live["spec"]["clusterIP"]


async def test_an_entry_under_the_user_agent_is_moved_when_named(client: Client, namespace: str) -> None:
    posts = PostCreates(client, also=(USER_AGENT_MANAGER,))
    await client.create(resources.SERVICES, service(namespace, [80, 81]), namespace)  # no field manager
    live = await client.get(resources.SERVICES, "posted", namespace)
    assert (USER_AGENT_MANAGER, "Update") in entries(live)
    body = converge.stamp(service(namespace, [80]))
    body = await posts.before_apply(resources.SERVICES, body, as_cached(live), MANAGER)
    await client.apply(resources.SERVICES, body, field_manager=MANAGER)
    after = await client.get(resources.SERVICES, "posted", namespace)
    assert [p["port"] for p in after["spec"]["ports"]] == [80]
    assert (USER_AGENT_MANAGER, "Update") not in entries(after)


class WriteAfterRead:
    """A client whose read is followed by another writer's change, before the move is sent."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.create, self.patch = client.create, client.patch
        self.reads = 0

    async def get(self, res: resources.Resource, name: str, namespace: str | None = None) -> Obj:
        obj = await self.client.get(res, name, namespace)
        self.reads += 1
        await self.client.patch(res, name, {"metadata": {"labels": {"touched": str(self.reads)}}}, namespace,
                                field_manager="someone-else")
        return obj


async def test_the_move_is_refused_over_a_stale_read(client: Client, namespace: str) -> None:
    posts = PostCreates(WriteAfterRead(client))
    await posts.create(resources.DEPLOYMENTS, deployment(namespace, env=["A"], labels={}), MANAGER)
    live = await client.get(resources.DEPLOYMENTS, "posted", namespace)
    with pytest.raises(errors.Conflict):
        await posts.before_apply(resources.DEPLOYMENTS, deployment(namespace, env=[], labels={}),
                                 as_cached(live), MANAGER)
    after = await client.get(resources.DEPLOYMENTS, "posted", namespace)
    assert (MANAGER, "Update") in entries(after)  # nothing moved; the pass is retried


async def test_the_first_apply_after_a_post_leaves_the_spec_as_it_was(client: Client, namespace: str) -> None:
    """The defaults the POST owned are dropped by that apply and filled in again: the same spec, the same
    pods. (The apiserver counts it as a new generation: it compares before filling the defaults in.) A
    restarted manager (nothing known of the POST) moves the fields before its first apply."""
    await converge.converge(client, deployment(namespace, env=["A"], labels={}), None,
                            posts=PostCreates(client))

    async def rolled_out() -> Obj | None:
        obj = await client.get(resources.DEPLOYMENTS, "posted", namespace)
        done = (obj.get("status") or {}).get("observedGeneration") == obj["metadata"]["generation"]
        return obj if done and (obj.get("status") or {}).get("updatedReplicas") == 1 else None

    live = await eventually(rolled_out)
    relabelled = deployment(namespace, env=["A"], labels={"tier": "x"})
    posts = PostCreates(client)  # restarted
    assert await converge.converge(client, relabelled, as_cached(live), posts=posts)
    assert (MANAGER, "Update") not in entries(await client.get(resources.DEPLOYMENTS, "posted", namespace))
    after = await client.get(resources.DEPLOYMENTS, "posted", namespace)
    assert after["metadata"]["labels"]["tier"] == "x"
    assert after["spec"] == live["spec"]
    await eventually(rolled_out)
    sets, _ = await client.list(resources.REPLICASETS, namespace)
    assert len(sets) == 1  # no rollout: the template hashes as before
