"""client.Client against the fake apiserver: verbs, headers, error mapping, retries, paging, watch."""

from __future__ import annotations

import asyncio
import base64
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from kubernetes_asyncio.client import Configuration

from ome.api import resources
from ome.framework import certs, errors, kubeconfig, watch
from ome.framework.client import META_ACCEPT, META_LIST_ACCEPT, Client, fence_writes
from ome.framework.transport import ClientSettings, RetryPolicy
from tests.unit.framework.fake_apiserver import FakeApiServer

Obj = dict[str, Any]
PODS = resources.PODS


def cm(name: str, ns: str = "default", **data: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": data,
    }


@pytest.fixture
async def fake() -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer()
    await server.start()
    yield server
    await server.stop()


def make_client(fake: FakeApiServer, **settings: Any) -> Client:
    return Client.from_configuration(Configuration(host=fake.url), ClientSettings(**settings))


@pytest.fixture
async def client(fake: FakeApiServer) -> AsyncIterator[Client]:
    async with make_client(fake) as c:
        yield c


async def test_create_get_update_delete_round_trip(client: Client, fake: FakeApiServer) -> None:
    created = await client.create(resources.CONFIGMAPS, cm("c", a="1"), field_manager="me")
    assert created["metadata"]["resourceVersion"]
    got = await client.get(resources.CONFIGMAPS, "c", "default")
    assert got["data"] == {"a": "1"}
    got["data"]["a"] = "2"
    updated = await client.update(resources.CONFIGMAPS, got)
    assert updated["data"] == {"a": "2"}
    assert await client.delete(resources.CONFIGMAPS, "c", "default") is None
    assert fake.get(resources.CONFIGMAPS, "default/c") is None
    assert fake.requests[0].query == {"fieldManager": "me"}


async def test_requests_carry_user_agent_and_json_accept(client: Client, fake: FakeApiServer) -> None:
    await client.create(resources.CONFIGMAPS, cm("c"))
    request = fake.requests[-1]
    assert request.headers["User-Agent"] == "ome-py/0.1"
    assert request.headers["Accept"] == "application/json"
    assert request.headers["Content-Type"] == "application/json"
    assert request.path == "/api/v1/namespaces/default/configmaps"


async def test_get_missing_raises_not_found(client: Client) -> None:
    with pytest.raises(errors.NotFound, match="not found"):
        await client.get(resources.CONFIGMAPS, "missing", "default")


async def test_create_existing_raises_already_exists(client: Client) -> None:
    await client.create(resources.CONFIGMAPS, cm("c"))
    with pytest.raises(errors.AlreadyExists):
        await client.create(resources.CONFIGMAPS, cm("c"))


async def test_update_with_stale_resource_version_raises_conflict(client: Client) -> None:
    first = await client.create(resources.CONFIGMAPS, cm("c"))
    await client.update(resources.CONFIGMAPS, {**first, "data": {"x": "1"}})
    with pytest.raises(errors.Conflict):
        await client.update(resources.CONFIGMAPS, {**first, "data": {"x": "2"}})


async def test_invalid_object_raises_invalid_with_causes(client: Client) -> None:
    with pytest.raises(errors.Invalid) as caught:
        await client.create(resources.CONFIGMAPS, cm("Upper"))
    assert caught.value.status == 422
    assert caught.value.causes[0].field == "metadata.name"


async def test_delete_preconditions_and_missing(client: Client) -> None:
    created = await client.create(resources.CONFIGMAPS, cm("c"))
    with pytest.raises(errors.Conflict):
        await client.delete(resources.CONFIGMAPS, "c", "default", uid="other-uid")
    assert await client.delete(resources.CONFIGMAPS, "c", "default", uid=created["metadata"]["uid"]) is None
    with pytest.raises(errors.NotFound):
        await client.delete(resources.CONFIGMAPS, "c", "default")


async def test_delete_sends_options_and_returns_a_finalized_object(
    client: Client, fake: FakeApiServer
) -> None:
    obj = cm("c")
    obj["metadata"]["finalizers"] = ["ome.io/cleanup"]
    await client.create(resources.CONFIGMAPS, obj)
    held = await client.delete(
        resources.CONFIGMAPS, "c", "default", propagation_policy="Foreground", grace_period_seconds=0
    )
    assert held is not None and held["metadata"]["deletionTimestamp"]

    sent = orjson.loads(fake.requests[-1].body)
    assert sent == {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground",
                    "gracePeriodSeconds": 0}  # fmt: skip


@pytest.mark.parametrize(
    ("patch_type", "content_type", "body"),
    [
        ("merge", "application/merge-patch+json", {"data": {"k": "v"}}),
        ("json", "application/json-patch+json", [{"op": "add", "path": "/data/k", "value": "v"}]),
        ("strategic", "application/strategic-merge-patch+json", {"data": {"k": "v"}}),
    ],
    ids=["merge", "json", "strategic"],
)
async def test_patch_sets_the_content_type(
    client: Client, fake: FakeApiServer, patch_type: Any, content_type: str, body: Any
) -> None:
    await client.create(resources.CONFIGMAPS, cm("c", a="1"))
    patched = await client.patch(resources.CONFIGMAPS, "c", body, "default", patch_type=patch_type)
    assert patched["data"] == {"a": "1", "k": "v"}
    assert fake.requests[-1].headers["Content-Type"] == content_type


async def test_apply_is_a_forced_server_side_apply(client: Client, fake: FakeApiServer) -> None:
    applied = await client.apply(resources.CONFIGMAPS, cm("c", a="1"), field_manager="ome")
    assert applied["data"] == {"a": "1"}
    request = fake.requests[-1]
    assert (request.method, request.path) == ("PATCH", "/api/v1/namespaces/default/configmaps/c")
    assert request.headers["Content-Type"] == "application/apply-patch+yaml"
    assert request.query == {"fieldManager": "ome", "force": "true"}


async def test_apply_fills_api_version_and_kind(client: Client, fake: FakeApiServer) -> None:
    await client.apply(
        resources.CONFIGMAPS, {"metadata": {"name": "c", "namespace": "n"}}, field_manager="ome"
    )
    sent = orjson.loads(fake.requests[-1].body)
    assert (sent["apiVersion"], sent["kind"]) == ("v1", "ConfigMap")


async def test_status_and_scale_subresources(client: Client, fake: FakeApiServer) -> None:
    replica = {"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica",
               "metadata": {"name": "r", "namespace": "n"}, "spec": {"replicas": 1}}  # fmt: skip
    created = await client.create(resources.INFERENCE_REPLICAS, replica)
    await client.update_status(resources.INFERENCE_REPLICAS, {**created, "status": {"phase": "Ready"}})
    assert fake.requests[-1].path.endswith("/inferencereplicas/r/status")
    await client.update_scale(resources.INFERENCE_REPLICAS, "r", "n", 3)
    assert fake.requests[-1].path.endswith("/inferencereplicas/r/scale")
    stored = await client.get(resources.INFERENCE_REPLICAS, "r", "n")
    assert stored["status"] == {"phase": "Ready"} and stored["spec"]["replicas"] == 3


async def test_retry_after_on_429_is_honoured(client: Client, fake: FakeApiServer) -> None:
    fake.fail("GET", "/configmaps/c", 429, reason="TooManyRequests", headers={"Retry-After": "0"}, times=2)
    await client.create(resources.CONFIGMAPS, cm("c"))
    assert (await client.get(resources.CONFIGMAPS, "c", "default"))["metadata"]["name"] == "c"
    assert sum(r.method == "GET" for r in fake.requests) == 3


async def test_5xx_with_retry_after_is_retried_without_it_not(client: Client, fake: FakeApiServer) -> None:
    await client.create(resources.CONFIGMAPS, cm("c"))
    fake.fail("GET", "/configmaps/c", 503, reason="ServiceUnavailable", headers={"Retry-After": "0"})
    await client.get(resources.CONFIGMAPS, "c", "default")
    fake.fail("GET", "/configmaps/c", 500)
    with pytest.raises(errors.ServerError):
        await client.get(resources.CONFIGMAPS, "c", "default")
    assert sum(r.method == "GET" for r in fake.requests) == 3


async def test_retries_stop_after_max_retries(fake: FakeApiServer) -> None:
    fake.fail("GET", "/configmaps/c", 429, reason="TooManyRequests", headers={"Retry-After": "0"}, times=10)
    async with make_client(fake, retry=RetryPolicy(max_retries=2)) as client:
        with pytest.raises(errors.TooManyRequests) as caught:
            await client.get(resources.CONFIGMAPS, "c", "default")
    assert caught.value.retry_after == 0.0
    assert len(fake.requests) == 3


NO_WAIT = RetryPolicy(connection_backoff=0.0)


async def test_a_get_whose_connection_dropped_is_retried(fake: FakeApiServer) -> None:
    fake.add(resources.CONFIGMAPS, cm("c"))
    fake.fail("GET", "/configmaps/c", 500, drop=True, times=2)
    async with make_client(fake, retry=NO_WAIT) as client:
        got = await client.get(resources.CONFIGMAPS, "c", "default")
    assert got["metadata"]["name"] == "c"
    assert sum(r.method == "GET" for r in fake.requests) == 3


async def test_connection_retries_are_bounded(fake: FakeApiServer) -> None:
    fake.add(resources.CONFIGMAPS, cm("c"))
    fake.fail("PATCH", "/configmaps/c", 500, drop=True, times=100)
    async with make_client(fake, retry=RetryPolicy(connection_backoff=0.0, connection_retries=2)) as client:
        with pytest.raises(errors.TransportError):
            await client.patch(resources.CONFIGMAPS, "c", {"data": {"a": "1"}}, "default", idempotent=True)
    assert len(fake.requests) == 3  # the first try and two retries


async def test_a_create_whose_connection_dropped_is_not_replayed(fake: FakeApiServer) -> None:
    fake.fail("POST", "/configmaps", 500, drop=True)
    async with make_client(fake, retry=NO_WAIT) as client:
        with pytest.raises(errors.TransportError):
            await client.create(resources.CONFIGMAPS, cm("c"))
    assert len(fake.requests) == 1


async def test_a_patch_declared_idempotent_is_retried_after_a_drop(fake: FakeApiServer) -> None:
    fake.add(resources.CONFIGMAPS, cm("c"))
    fake.fail("PATCH", "/configmaps/c", 500, drop=True)
    async with make_client(fake, retry=NO_WAIT) as client:
        with pytest.raises(errors.TransportError):
            await client.patch(resources.CONFIGMAPS, "c", {"data": {"a": "1"}}, "default")
        patched = await client.patch(resources.CONFIGMAPS, "c", {"data": {"a": "1"}}, "default", idempotent=True)
    assert patched["data"] == {"a": "1"}


def test_retry_policy_decisions() -> None:
    policy = RetryPolicy(max_retries=3, connection_retries=2, connection_backoff=0.1, max_retry_after=5.0)
    throttled = errors.TooManyRequests(429, "TooManyRequests", "slow down")
    throttled.retry_after = 30.0
    assert policy.delay("POST", throttled, 1) == 5.0, "Retry-After is honoured for any verb, capped"
    assert policy.delay("POST", throttled, 4) is None, "max_retries bounds every retry"
    unavailable = errors.ServerError(503, "ServiceUnavailable", "down")
    assert policy.delay("GET", unavailable, 1) is None, "a 5xx without Retry-After is not retried"
    dropped = errors.TransportError(0, "TransportError", "reset")
    assert policy.delay("GET", dropped, 1, rng=lambda: 0.0) == 0.1
    assert policy.delay("DELETE", dropped, 2, rng=lambda: 1.0) == pytest.approx(0.3)
    assert policy.delay("GET", dropped, 3) is None
    assert policy.delay("POST", dropped, 1) is None and policy.delay("PATCH", dropped, 1) is None
    assert policy.delay("PATCH", dropped, 1, idempotent=True) is not None
    timed_out = errors.ServerTimeout(0, "Timeout", "no answer")
    assert policy.delay("GET", timed_out, 1) is None, "a timed-out request has spent its deadline"


async def test_writes_are_refused_by_the_fence_of_their_task(client: Client, fake: FakeApiServer) -> None:
    fake.add(resources.CONFIGMAPS, cm("c"))
    refused = errors.NotLeader(0, "NotLeader", "no lease")

    def fence() -> None:
        raise refused

    async def leader_work() -> None:
        fence_writes(fence)
        assert (await client.get(resources.CONFIGMAPS, "c", "default"))["metadata"]["name"] == "c"
        child = asyncio.create_task(client.create(resources.CONFIGMAPS, cm("d")))
        with pytest.raises(errors.NotLeader):
            await child
        with pytest.raises(errors.NotLeader):
            await client.delete(resources.CONFIGMAPS, "c", "default")

    await asyncio.create_task(leader_work())
    writes = [r for r in fake.requests if r.method != "GET"]
    assert writes == []
    await client.create(resources.CONFIGMAPS, cm("e"))  # other tasks are not fenced


async def test_a_write_waiting_to_be_retried_asks_the_fence_again(client: Client, fake: FakeApiServer) -> None:
    """A write that waited (for a retry here, or the rate limit) while the process lost its Lease is not
    sent on waking: the fence is asked as each attempt goes out, not only when the call starts."""
    fake.fail("POST", "/configmaps", 429, reason="TooManyRequests", headers={"Retry-After": "0"})
    asked: list[int] = []

    def fence() -> None:
        asked.append(len([r for r in fake.requests if r.method == "POST"]))
        if asked[-1] > 0:  # the first attempt was answered 429; the Lease went while the retry waited
            raise errors.NotLeader(0, "NotLeader", "no lease")

    async def leader_work() -> None:
        fence_writes(fence)
        with pytest.raises(errors.NotLeader):
            await client.create(resources.CONFIGMAPS, cm("late"))

    await asyncio.create_task(leader_work())
    assert len([r for r in fake.requests if r.method == "POST"]) == 1
    # at the call, before the first attempt, at its connection, as its body is written, before the retry
    assert asked == [0, 0, 0, 0, 1]


@pytest.mark.parametrize(("verb", "refused_at"), [
    ("POST", 3),  # at its connection: the last wait (a free connection, or a handshake)
    ("DELETE", 3),  # a write without a body: its headers go out with the connection held, nothing later
    ("POST", 4),  # as its body is written: aiohttp sends the headers with it, from a task of its own
], ids=["create-at-its-connection", "delete-at-its-connection", "create-as-its-body-goes-out"])
async def test_a_write_asks_the_fence_again_before_its_bytes_go_out(
    client: Client, fake: FakeApiServer, verb: str, refused_at: int
) -> None:
    """After the call and before the attempt, the fence is asked once the write holds its connection and
    again as its body is written (a loop turn or more later): a process stopped in either wait past its
    Lease must not send the write on waking. The fence's own error reaches the caller and nothing reached
    the server."""
    fake.add(resources.CONFIGMAPS, cm("stopped"))
    asked: list[str] = []

    def fence() -> None:
        asked.append("asked")
        if len(asked) == refused_at:  # the Lease was held at every ask before this one
            raise errors.NotLeader(0, "NotLeader", "no lease")

    async def leader_work() -> None:
        fence_writes(fence)
        with pytest.raises(errors.NotLeader):
            if verb == "POST":
                await client.create(resources.CONFIGMAPS, cm("stopped-2"))
            else:
                await client.delete(resources.CONFIGMAPS, "stopped", "default")

    await asyncio.create_task(leader_work())
    assert len(asked) == refused_at
    assert [r for r in fake.requests if r.method == verb] == []
    await client.create(resources.CONFIGMAPS, cm("after"))  # the connection pool is still usable
    assert [r.method for r in fake.requests if r.method == "POST"] == ["POST"]


async def test_per_call_timeout_raises_server_timeout(client: Client, fake: FakeApiServer) -> None:
    fake.fail("GET", "/configmaps/slow", 500, delay=5.0)
    started = time.monotonic()
    with pytest.raises(errors.ServerTimeout):
        await client.get(resources.CONFIGMAPS, "slow", "default", timeout=0.2)
    assert time.monotonic() - started < 1.0


async def test_connection_refused_raises_transport_error() -> None:
    settings = ClientSettings(retry=NO_WAIT)
    async with Client.from_configuration(Configuration(host="http://127.0.0.1:9"), settings) as client:
        with pytest.raises(errors.TransportError) as caught:
            await client.get(resources.CONFIGMAPS, "c", "default")
    assert caught.value.status == 0
    assert isinstance(caught.value, ConnectionError)


async def test_list_follows_continue_tokens(client: Client, fake: FakeApiServer) -> None:
    for i in range(7):
        fake.add(resources.CONFIGMAPS, cm(f"c{i}"))
    items, rv = await client.list(resources.CONFIGMAPS, "default", limit=3)
    assert [i["metadata"]["name"] for i in items] == [f"c{i}" for i in range(7)]
    assert rv == str(fake.rv)
    assert all((i["apiVersion"], i["kind"]) == ("v1", "ConfigMap") for i in items)  # the server omits them
    assert [r.query.get("limit") for r in fake.requests] == ["3", "3", "3"]
    assert "continue" in fake.requests[1].query


async def test_list_restarts_unpaginated_when_the_continue_token_expires(
    client: Client, fake: FakeApiServer
) -> None:
    for i in range(5):
        fake.add(resources.CONFIGMAPS, cm(f"c{i}"))
    fake.fail("GET", "/configmaps", 410, reason="Expired", query="continue=")
    items, _ = await client.list(resources.CONFIGMAPS, "default", limit=2)
    assert len(items) == 5
    assert "limit" not in fake.requests[-1].query and "continue" not in fake.requests[-1].query


async def test_list_transform_runs_per_item(client: Client, fake: FakeApiServer) -> None:
    fake.add(resources.CONFIGMAPS, cm("c", a="1"))
    items, _ = await client.list(resources.CONFIGMAPS, transform=lambda o: {"name": o["metadata"]["name"]})
    assert items == [{"name": "c"}]


async def test_selectors_are_sent(client: Client, fake: FakeApiServer) -> None:
    fake.add(
        resources.CONFIGMAPS, {**cm("a"), "metadata": {"name": "a", "namespace": "n", "labels": {"x": "1"}}}
    )
    fake.add(resources.CONFIGMAPS, cm("b", "n"))
    items, _ = await client.list(
        resources.CONFIGMAPS, "n", label_selector={"x": "1"}, field_selector="metadata.name=a"
    )
    assert [i["metadata"]["name"] for i in items] == ["a"]
    assert fake.requests[-1].query["labelSelector"] == "x=1"


async def test_metadata_only_list_and_get(client: Client, fake: FakeApiServer) -> None:
    fake.add(resources.CONFIGMAPS, cm("c", big="x" * 1000))
    items, _ = await client.list(resources.CONFIGMAPS, metadata_only=True)
    assert fake.requests[-1].headers["Accept"] == META_LIST_ACCEPT
    assert items[0]["kind"] == "PartialObjectMetadata" and "data" not in items[0]
    got = await client.get(resources.CONFIGMAPS, "c", "default", metadata_only=True)
    assert fake.requests[-1].headers["Accept"] == META_ACCEPT
    assert got["metadata"]["name"] == "c" and "data" not in got


async def test_is_served(client: Client) -> None:
    assert await client.is_served(resources.INFERENCE_SERVICES)
    assert not await client.is_served(resources.Resource("nope.io", "v1", "X", "xs", True))


async def test_watch_streams_events_and_raises_gone_on_expiry(client: Client, fake: FakeApiServer) -> None:
    fake.add(resources.CONFIGMAPS, cm("c"))
    start_rv = str(fake.rv)
    seen: list[tuple[str, str]] = []

    async def consume() -> None:
        async for event_type, obj in client.watch(
            resources.CONFIGMAPS, resource_version=start_rv, timeout_seconds=30
        ):
            seen.append((event_type, obj["metadata"].get("name", "")))
            if len(seen) == 2:
                fake.send_bookmark()
            if len(seen) == 3:
                fake.expire_watches()

    task = asyncio.create_task(consume())
    await until(lambda: fake.open_watches == 1)
    fake.add(resources.CONFIGMAPS, cm("d"))
    fake.remove(resources.CONFIGMAPS, "default/c")
    with pytest.raises(errors.Gone):
        await asyncio.wait_for(task, 2)
    assert seen == [("ADDED", "d"), ("DELETED", "c"), ("BOOKMARK", "")]
    query = fake.requests[-1].query
    assert query == {
        "watch": "1",
        "timeoutSeconds": "30",
        "resourceVersion": start_rv,
        "allowWatchBookmarks": "true",
    }


async def test_watch_list_query(client: Client, fake: FakeApiServer) -> None:
    fake.add(resources.CONFIGMAPS, cm("c"))
    stream = client.watch(
        resources.CONFIGMAPS, resource_version="", timeout_seconds=5, send_initial_events=True
    )
    events = [await anext(stream), await anext(stream)]
    await stream.aclose()
    assert [e[0] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1][1]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    query = fake.requests[-1].query
    assert (query["sendInitialEvents"], query["resourceVersionMatch"]) == ("true", "NotOlderThan")
    assert "resourceVersion" not in query


async def test_watch_rejected_at_open_raises_the_mapped_error(client: Client, fake: FakeApiServer) -> None:
    fake.reject_watch_list = True
    with pytest.raises(errors.Invalid):
        async for _ in client.watch(
            resources.PODS, resource_version="", timeout_seconds=5, send_initial_events=True
        ):
            pass


async def test_half_open_watch_times_out_on_socket_read(fake: FakeApiServer) -> None:
    fake.add(resources.CONFIGMAPS, cm("c"))
    fake.hang_watches()
    async with make_client(fake, watch_sock_read=0.3) as client:
        started = time.monotonic()
        with pytest.raises(errors.ServerTimeout):
            async for _ in client.watch(resources.CONFIGMAPS, resource_version="", timeout_seconds=30):
                pass
    assert 0.25 < time.monotonic() - started < 2.0


async def test_from_kubeconfig_sends_the_bearer_token(fake: FakeApiServer, tmp_path: Path) -> None:
    kubeconfig = {
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": fake.url}}],
        "users": [{"name": "u", "user": {"token": "s3cret"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
    }  # fmt: skip
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    async with await Client.from_kubeconfig(str(path)) as client:
        assert client.host == fake.url
        with pytest.raises(errors.NotFound):
            await client.get(resources.CONFIGMAPS, "c", "default")
    assert fake.requests[-1].headers["Authorization"] == "Bearer s3cret"


async def until(predicate: Any, within: float = 2.0) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    ca_cert, ca_key = certs.generate_ca("fake-ca")
    server = certs.generate_serving_cert(ca_cert, ca_key, "fake-apiserver", ip_addresses=["127.0.0.1"])
    user = certs.generate_client_cert(ca_cert, ca_key, "ome", ["system:masters"])
    root = tmp_path_factory.mktemp("pki")
    files = {
        "ca": ca_cert,
        "server.crt": server[0],
        "server.key": server[1],
        "user.crt": user[0],
        "user.key": user[1],
    }
    for name, data in files.items():
        (root / name).write_bytes(data)
    return {name: root / name for name in files}


@pytest.fixture(params=[True], ids=["client-cert-required"])
async def tls_fake(pki: dict[str, Path], request: pytest.FixtureRequest) -> AsyncIterator[FakeApiServer]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki["ca"]))
    context.load_cert_chain(pki["server.crt"], pki["server.key"])
    # Required: like an apiserver with --client-ca-file and nothing else to authenticate with.
    context.verify_mode = ssl.CERT_REQUIRED if request.param else ssl.CERT_OPTIONAL
    server = FakeApiServer()
    await server.start(ssl_context=context)
    yield server
    await server.stop()


def tls_kubeconfig(tmp_path: Path, url: str, pki: dict[str, Path], *, with_client_cert: bool) -> Path:
    def data(name: str) -> str:
        return base64.b64encode(pki[name].read_bytes()).decode()

    user = {"client-certificate-data": data("user.crt"), "client-key-data": data("user.key")}
    kubeconfig = {
        "apiVersion": "v1", "kind": "Config", "current-context": "tls",
        "clusters": [{"name": "tls", "cluster": {"server": url, "certificate-authority-data": data("ca")}}],
        "users": [{"name": "u", "user": user if with_client_cert else {"token": "t"}}],
        "contexts": [{"name": "tls", "context": {"cluster": "tls", "user": "u"}}],
    }  # fmt: skip
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    return path


async def test_kubeconfig_tls_with_ca_and_client_certificate(
    tls_fake: FakeApiServer, pki: dict[str, Path], tmp_path: Path
) -> None:
    path = tls_kubeconfig(tmp_path, tls_fake.url, pki, with_client_cert=True)
    async with await Client.from_kubeconfig(str(path)) as client:
        created = await client.create(resources.CONFIGMAPS, cm("c"))
    assert created["metadata"]["name"] == "c"
    assert tls_fake.requests[-1].path == "/api/v1/namespaces/default/configmaps"


async def test_kubeconfig_tls_without_client_certificate_is_refused(
    tls_fake: FakeApiServer, pki: dict[str, Path], tmp_path: Path
) -> None:
    path = tls_kubeconfig(tmp_path, tls_fake.url, pki, with_client_cert=False)
    async with await Client.from_kubeconfig(str(path)) as client:
        with pytest.raises(errors.TransportError):
            await client.get(resources.CONFIGMAPS, "c", "default")
    assert tls_fake.requests == []


async def test_untrusted_server_certificate_is_refused(tls_fake: FakeApiServer) -> None:
    async with Client.from_configuration(Configuration(host=tls_fake.url)) as client:
        with pytest.raises(errors.TransportError, match="certificate"):
            await client.get(resources.CONFIGMAPS, "c", "default")


def test_watch_lines_that_are_not_events_raise() -> None:
    with pytest.raises(errors.TransportError, match="undecodable"):
        watch.decode_event(b"{not json")
    with pytest.raises(errors.TransportError, match="malformed"):
        watch.decode_event(b'{"type": "ADDED"}')
    with pytest.raises(errors.Forbidden):
        watch.decode_event(
            orjson.dumps({"kind": "Status", "code": 403, "reason": "Forbidden", "message": "no"})
        )
    with pytest.raises(errors.ServerError):
        watch.decode_event(orjson.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 500}}))


@pytest.mark.parametrize("tls_fake", [False], indirect=True, ids=["client-cert-optional"])
async def test_from_incluster_uses_the_service_account_token_and_ca(
    tls_fake: FakeApiServer, pki: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = tmp_path / "token"
    token.write_text("sa-token")
    monkeypatch.setattr(kubeconfig, "SERVICE_TOKEN_PATH", str(token))
    monkeypatch.setattr(kubeconfig, "SERVICE_CA_PATH", str(pki["ca"]))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", tls_fake.url.rsplit(":", 1)[1])
    monkeypatch.delenv("KUBECONFIG", raising=False)
    async with await Client.from_environment() as client:
        assert client.host == tls_fake.url
        with pytest.raises(errors.NotFound):
            await client.get(resources.CONFIGMAPS, "c", "default")
    assert tls_fake.requests[-1].headers["Authorization"] == "Bearer sa-token"


async def test_qps_limit_spaces_requests_after_the_burst(fake: FakeApiServer) -> None:
    import time

    async with make_client(fake, qps=20.0, burst=5) as limited:
        await limited.create(resources.CONFIGMAPS, cm("q"))
        started = time.monotonic()
        for _ in range(14):  # 4 left in the burst, then 10 at 20/s: about 0.5 s
            await limited.get(resources.CONFIGMAPS, "q", "default")
        took = time.monotonic() - started
    assert 0.4 <= took < 2.0


def test_qps_without_burst_is_rejected() -> None:
    with pytest.raises(ValueError, match="burst"):
        ClientSettings(qps=10.0)


async def test_an_api_error_is_freed_without_the_cyclic_collector(client: Client) -> None:
    """The transport's frame does not keep the error it raises: no cycle through the traceback, so a
    conflict (routine under churn) and the response it came from go when the caller drops them."""
    import gc
    import weakref

    first = await client.create(resources.CONFIGMAPS, cm("c"))
    await client.update(resources.CONFIGMAPS, {**first, "data": {"x": "1"}})
    gc.collect()
    gc.disable()
    try:
        ref: weakref.ref[BaseException] | None = None
        try:
            await client.update(resources.CONFIGMAPS, {**first, "data": {"x": "2"}})
        except errors.Conflict as exc:
            ref = weakref.ref(exc)
        assert ref is not None and ref() is None, "the Conflict outlived its handler: a reference cycle"
    finally:
        gc.enable()


async def test_qps_limit_applies_per_resource_type(fake: FakeApiServer) -> None:
    """controller-manager-flags.md: `--kube-api-qps` bounds each API client, and the manager has a client
    per resource type. So a resource type's burst spent does not delay another type's requests, and a
    status write shares its resource's bucket."""
    from tests.unit.framework.fakeclock import FakeClock

    waits: list[float] = []

    async def record(delay: float) -> None:
        waits.append(delay)

    async with make_client(fake, qps=2.0, burst=2) as limited:
        limited._transport._clock = FakeClock()
        limited._transport._sleep = record
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "namespace": "default"}}
        made = await limited.create(resources.PODS, pod)
        await limited.update_status(resources.PODS, made)  # the pods burst is spent
        assert waits == []
        with pytest.raises(errors.NotFound):
            await limited.get(resources.CONFIGMAPS, "c", "default")  # its own bucket: no wait
        assert waits == []
        await limited.get(resources.PODS, "q", "default")
        assert waits == [pytest.approx(0.5)]  # the next pods token, at 2 a second
        await limited.get(resources.PODS, "q", "default")
        assert waits == [pytest.approx(0.5), pytest.approx(1.0)]
