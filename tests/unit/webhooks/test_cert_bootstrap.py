"""The in-cluster certificate bootstrap: its pure checks, and its writes against an in-memory apiserver."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import datetime
import ssl
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from ome.cmd import manager as manager_cmd
from ome.framework import certs, errors, pem_files, resources
from ome.framework.client import PatchType
from ome.framework.resources import Resource
from ome.framework.webhook_server import WebhookServer
from ome.webhooks import cert_bootstrap as cb
from ome.webhooks import cert_material as cm
from ome.webhooks import registry

Obj = dict[str, Any]
NS, SECRET, SERVICE, CONFIG = "ome", "ome-webhook-server-cert", "ome-webhook-server-service", "inferenceservice.ome.io"
NAMES = cb.service_dns_names(SERVICE, NS)
NOW = datetime.datetime.now(datetime.UTC)
CA, CA_KEY = certs.generate_ca("test-ca")


def _pair(names: tuple[str, ...] = NAMES, *, days: int = 365, ca: tuple[bytes, bytes] = (CA, CA_KEY)) -> tuple[bytes, bytes]:
    return certs.generate_serving_cert(ca[0], ca[1], names[0], dns_names=names, validity_days=days)


def _secret(cert: bytes, key: bytes, ca: bytes = CA) -> Obj:
    return cb.build_secret(SECRET, NS, cm.build_secret_data(cert, key, ca, now=NOW))


GOOD_CERT, GOOD_KEY = _pair()


# -- pure parts ------------------------------------------------------------------------------------


def test_service_dns_names() -> None:
    assert NAMES == ("ome-webhook-server-service.ome.svc", "ome-webhook-server-service.ome.svc.cluster.local")


def test_covers_needs_every_name_as_a_dns_san() -> None:
    assert cm.covers(GOOD_CERT, NAMES)
    assert cm.covers(GOOD_CERT, [n.upper() for n in NAMES])
    short, _ = _pair(NAMES[:1])
    assert not cm.covers(short, NAMES)
    other_ns, _ = _pair(cb.service_dns_names(SERVICE, "other"))
    assert not cm.covers(other_ns, NAMES)
    no_san, _ = certs.generate_serving_cert(CA, CA_KEY, NAMES[0])  # the CN alone does not count
    assert not cm.covers(no_san, NAMES[:1])


def test_expires_within_the_renewal_window() -> None:
    soon, _ = _pair(days=10)
    assert cm.expires_within(soon, cb.RENEW_BEFORE, NOW)
    assert not cm.expires_within(GOOD_CERT, cb.RENEW_BEFORE, NOW)
    assert cm.expires_within(GOOD_CERT, cb.RENEW_BEFORE, NOW + datetime.timedelta(days=340))


def test_secret_problem_accepts_a_good_secret_and_names_each_defect() -> None:
    assert cm.secret_problem(_secret(GOOD_CERT, GOOD_KEY), NAMES, NOW) is None
    missing = _secret(GOOD_CERT, GOOD_KEY)
    del missing["data"]["ca.crt"]
    assert "missing" in (cm.secret_problem(missing, NAMES, NOW) or "")
    garbled = _secret(GOOD_CERT, GOOD_KEY)
    garbled["data"]["tls.crt"] = "not base64!"
    assert "missing" in (cm.secret_problem(garbled, NAMES, NOW) or "")
    _, other_key = _pair()
    assert "does not match" in (cm.secret_problem(_secret(GOOD_CERT, other_key), NAMES, NOW) or "")
    other_ca, _ = certs.generate_ca("other-ca")
    assert "not issued" in (cm.secret_problem(_secret(GOOD_CERT, GOOD_KEY, other_ca), NAMES, NOW) or "")
    short, short_key = _pair(NAMES[:1])
    assert "does not cover" in (cm.secret_problem(_secret(short, short_key), NAMES, NOW) or "")
    soon, soon_key = _pair(days=10)
    assert "expires" in (cm.secret_problem(_secret(soon, soon_key), NAMES, NOW) or "")
    expiring_ca = certs.generate_ca("short-ca", validity_days=10)
    cert, key = _pair(ca=expiring_ca)
    assert "CA expires" in (cm.secret_problem(_secret(cert, key, expiring_ca[0]), NAMES, NOW) or "")


def test_replacement_bundle_keeps_the_previous_ca_while_it_is_valid() -> None:
    new_ca, new_key = certs.generate_ca("new-ca")
    cert, key = _pair(ca=(new_ca, new_key))
    previous = {"tls.crt": GOOD_CERT, "tls.key": GOOD_KEY, "ca.crt": CA}
    data = cm.build_secret_data(cert, key, new_ca, previous=previous, now=NOW)
    bundle = x509.load_pem_x509_certificates(base64.b64decode(data["ca.crt"]))
    assert [c.subject.rfc4514_string() for c in bundle] == ["CN=new-ca", "CN=test-ca"]
    later = NOW + datetime.timedelta(days=400)  # the old CA has expired by then
    data = cm.build_secret_data(cert, key, new_ca, previous=previous, now=later)
    assert base64.b64decode(data["ca.crt"]) == new_ca


def _hooks(bundle: str | None = None) -> list[Obj]:
    config: Obj = {"service": {"name": SERVICE, "namespace": NS, "path": "/p", "port": 443}}
    if bundle is not None:
        config["caBundle"] = bundle
    return [{"name": f"h{i}", "clientConfig": dict(config), "sideEffects": "None"} for i in range(2)]


def test_patched_webhooks_sets_every_ca_bundle_and_keeps_the_rest() -> None:
    encoded = base64.b64encode(CA).decode()
    patched = cb.patched_webhooks(_hooks(), CA)
    assert patched is not None
    assert [h["clientConfig"]["caBundle"] for h in patched] == [encoded, encoded]
    assert patched[0]["clientConfig"]["service"]["name"] == SERVICE and patched[0]["sideEffects"] == "None"
    mixed = _hooks(encoded)
    mixed[1]["clientConfig"]["caBundle"] = "c3RhbGU="
    assert cb.patched_webhooks(mixed, CA) is not None


def test_patched_webhooks_is_none_when_nothing_changes() -> None:
    assert cb.patched_webhooks(_hooks(base64.b64encode(CA).decode()), CA) is None
    assert cb.patched_webhooks([], CA) is None


# -- against an in-memory apiserver ----------------------------------------------------------------


class FakeApi:
    """Enough of the apiserver: resourceVersions, create/update/merge-patch preconditions, a write log."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str | None, str], Obj] = {}
        self.writes: list[tuple[str, str, str]] = []
        self._rv = 0
        self.before_write: Callable[[str, Resource, str], None] | None = None

    def put(self, res: Resource, obj: Obj) -> Obj:
        self._rv += 1
        stored = copy.deepcopy(obj)
        stored["metadata"]["resourceVersion"] = str(self._rv)
        self.objects[(res.plural, stored["metadata"].get("namespace"), stored["metadata"]["name"])] = stored
        return copy.deepcopy(stored)

    def _hook(self, verb: str, res: Resource, name: str) -> None:
        if self.before_write is not None:
            hook, self.before_write = self.before_write, None
            hook(verb, res, name)

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        try:
            return copy.deepcopy(self.objects[(res.plural, namespace, name)])
        except KeyError:
            raise errors.NotFound(404, "NotFound", f"{res.plural} {name} not found") from None

    async def create(self, res: Resource, obj: Obj, namespace: str | None = None) -> Obj:
        name = obj["metadata"]["name"]
        self._hook("create", res, name)
        if (res.plural, namespace, name) in self.objects:
            raise errors.AlreadyExists(409, "AlreadyExists", f"{name} already exists")
        self.writes.append(("create", res.plural, name))
        return self.put(res, {**obj, "metadata": {**obj["metadata"], "namespace": namespace}})

    async def update(self, res: Resource, obj: Obj) -> Obj:
        meta = obj["metadata"]
        self._hook("update", res, meta["name"])
        self._check_version(res, meta.get("namespace"), meta["name"], meta.get("resourceVersion"))
        self.writes.append(("update", res.plural, meta["name"]))
        return self.put(res, obj)

    async def patch(self, res: Resource, name: str, patch: Obj | list[Obj], namespace: str | None = None,
                    *, patch_type: PatchType = "merge") -> Obj:
        assert patch_type == "merge" and isinstance(patch, dict)
        self._hook("patch", res, name)
        current = await self.get(res, name, namespace)
        self._check_version(res, namespace, name, (patch.get("metadata") or {}).get("resourceVersion"))
        self.writes.append(("patch", res.plural, name))
        return self.put(res, _merge(current, patch))

    def _check_version(self, res: Resource, namespace: str | None, name: str, version: str | None) -> None:
        current = self.objects[(res.plural, namespace, name)]
        if version is not None and version != current["metadata"]["resourceVersion"]:
            raise errors.Conflict(409, "Conflict", "the object has been modified")


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out


def _with_configurations(api: FakeApi) -> FakeApi:
    mutating, validating = registry.webhook_configurations(registry.service_client_config(), name=CONFIG)
    api.put(resources.MUTATING_WEBHOOK_CONFIGURATIONS, mutating)
    api.put(resources.VALIDATING_WEBHOOK_CONFIGURATIONS, validating)
    return api


async def _ensure(api: FakeApi, cert_dir: Path) -> bytes:
    return await cb.ensure_serving_certificate(
        api, namespace=NS, secret_name=SECRET, service_name=SERVICE, cert_dir=cert_dir, configuration_name=CONFIG
    )


def _stored_secret(api: FakeApi) -> Obj:
    return api.objects[("secrets", NS, SECRET)]


def _bundles(api: FakeApi) -> set[str]:
    return {h["clientConfig"].get("caBundle") for res in cb.CONFIGURATIONS
            for h in api.objects[(res.plural, None, CONFIG)]["webhooks"]}


async def test_first_run_creates_the_secret_writes_files_and_patches_both_configurations(tmp_path: Path) -> None:
    api = _with_configurations(FakeApi())
    ca = await _ensure(api, tmp_path)
    assert api.writes == [("create", "secrets", SECRET), ("patch", "mutatingwebhookconfigurations", CONFIG),
                          ("patch", "validatingwebhookconfigurations", CONFIG)]
    secret = _stored_secret(api)
    assert secret["type"] == "kubernetes.io/tls" and cm.secret_problem(secret, NAMES, NOW) is None
    for key in ("tls.crt", "tls.key", "ca.crt"):
        assert (tmp_path / key).read_bytes() == base64.b64decode(secret["data"][key])
    assert stat.S_IMODE((tmp_path / "tls.key").stat().st_mode) == 0o600
    assert (tmp_path / "ca.crt").read_bytes() == ca
    assert _bundles(api) == {base64.b64encode(ca).decode()}

    api.writes.clear()
    signature = (tmp_path / "tls.crt").stat().st_mtime_ns, (tmp_path / "tls.crt").stat().st_ino
    assert await _ensure(api, tmp_path) == ca
    assert api.writes == [], "a second run must write nothing"
    assert ((tmp_path / "tls.crt").stat().st_mtime_ns, (tmp_path / "tls.crt").stat().st_ino) == signature


async def test_existing_valid_secret_is_used_without_writes(tmp_path: Path) -> None:
    api = FakeApi()
    api.put(resources.SECRETS, _secret(GOOD_CERT, GOOD_KEY))
    assert await _ensure(api, tmp_path) == CA
    assert api.writes == []
    assert (tmp_path / "tls.crt").read_bytes() == GOOD_CERT and (tmp_path / "tls.key").read_bytes() == GOOD_KEY


async def test_create_race_uses_the_other_replicas_secret(tmp_path: Path) -> None:
    api = _with_configurations(FakeApi())
    theirs = _secret(GOOD_CERT, GOOD_KEY)
    api.before_write = lambda verb, res, name: api.put(resources.SECRETS, theirs)
    assert await _ensure(api, tmp_path) == CA
    assert [w for w in api.writes if w[1] == "secrets"] == []
    assert (tmp_path / "tls.crt").read_bytes() == GOOD_CERT
    assert _bundles(api) == {base64.b64encode(CA).decode()}


@pytest.mark.parametrize("stale", ["names", "expiry"])
async def test_stale_secret_is_replaced_under_its_resource_version(tmp_path: Path, stale: str) -> None:
    api = FakeApi()
    cert, key = _pair(NAMES[:1]) if stale == "names" else _pair(days=10)
    old = api.put(resources.SECRETS, _secret(cert, key))
    ca = await _ensure(api, tmp_path)
    assert api.writes == [("update", "secrets", SECRET)]
    secret = _stored_secret(api)
    assert secret["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]
    assert cm.secret_problem(secret, NAMES, NOW) is None
    assert (tmp_path / "tls.crt").read_bytes() != cert
    assert ca.endswith(CA), "the replaced CA stays in the bundle while still valid"


async def test_update_conflict_rereads_and_uses_the_winner(tmp_path: Path) -> None:
    api = FakeApi()
    stale_cert, stale_key = _pair(NAMES[:1])
    api.put(resources.SECRETS, _secret(stale_cert, stale_key))
    api.before_write = lambda verb, res, name: api.put(resources.SECRETS, _secret(GOOD_CERT, GOOD_KEY))
    assert await _ensure(api, tmp_path) == CA
    assert api.writes == []
    assert (tmp_path / "tls.crt").read_bytes() == GOOD_CERT


async def test_ca_bundle_patch_conflict_is_retried(tmp_path: Path) -> None:
    api = _with_configurations(FakeApi())
    api.put(resources.SECRETS, _secret(GOOD_CERT, GOOD_KEY))

    def touch(verb: str, res: Resource, name: str) -> None:  # someone else writes the configuration first
        api.put(res, api.objects[(res.plural, None, name)])

    api.before_write = touch
    await _ensure(api, tmp_path)
    assert api.writes == [("patch", "mutatingwebhookconfigurations", CONFIG),
                          ("patch", "validatingwebhookconfigurations", CONFIG)]
    assert _bundles(api) == {base64.b64encode(CA).decode()}


async def test_missing_configuration_is_not_fatal(tmp_path: Path) -> None:
    api = FakeApi()
    _, validating = registry.webhook_configurations(registry.service_client_config(), name=CONFIG)
    api.put(resources.VALIDATING_WEBHOOK_CONFIGURATIONS, validating)
    ca = await _ensure(api, tmp_path)
    assert ("patch", "validatingwebhookconfigurations", CONFIG) in api.writes
    hooks = api.objects[("validatingwebhookconfigurations", None, CONFIG)]["webhooks"]
    assert {h["clientConfig"]["caBundle"] for h in hooks} == {base64.b64encode(ca).decode()}


async def test_bootstrapped_files_serve_tls_the_bundle_verifies_for_the_service_name(tmp_path: Path) -> None:
    """Also across a rotation: a replica still serving the old pair verifies against the new bundle."""
    api = FakeApi()
    old_dir, new_dir = tmp_path / "old", tmp_path / "new"
    soon, soon_key = _pair(days=10)
    api.put(resources.SECRETS, _secret(soon, soon_key))
    pem_files.write_cert_pair(old_dir, soon, soon_key)  # a replica that loaded the pair before it went stale
    bundle = await _ensure(api, new_dir)  # renews: the Secret's certificate expires within the window
    assert (new_dir / "tls.crt").read_bytes() != soon
    for cert_dir in (new_dir, old_dir):
        server = WebhookServer(host="127.0.0.1", port=0, cert_dir=str(cert_dir))
        await server.start()
        try:
            context = ssl.create_default_context(cadata=bundle.decode())
            _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=context,
                                                      server_hostname=NAMES[0])
            writer.close()
            await writer.wait_closed()
        finally:
            await server.stop()


async def test_refresh_survives_a_failed_round_and_renews(tmp_path: Path) -> None:
    api = FakeApi()

    def fail(verb: str, res: Resource, name: str) -> None:
        raise errors.ServerError(500, "InternalError", "boom")

    api.before_write = fail  # the first round's create fails; the loop must go on to a second one
    task = asyncio.create_task(cb.refresh_periodically(
        api, namespace=NS, secret_name=SECRET, service_name=SERVICE, cert_dir=tmp_path, configuration_name=CONFIG,
        interval=0.01))
    try:
        for _ in range(1000):  # up to 10 s
            if (tmp_path / "tls.crt").exists():
                break
            await asyncio.sleep(0.01)
        assert not task.done(), "the loop runs until cancelled"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert api.writes.count(("create", "secrets", SECRET)) == 1


def test_manager_rejects_bootstrap_with_self_register(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        manager_cmd.parse_args(["--webhook-cert-bootstrap", "--webhook-self-register"])
    assert exit_info.value.code == 2
    assert "not allowed with" in capsys.readouterr().err
    args = manager_cmd.parse_args(["--webhook-cert-bootstrap"])
    assert (args.webhook_service_name, args.webhook_cert_secret) == (SERVICE, SECRET)
