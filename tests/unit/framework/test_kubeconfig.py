"""Our kubeconfig and in-cluster loader (ome/framework/kubeconfig.py): kubectl's merge rules, file and data
fields, errors that name what is missing, the exec fallback to kubernetes-asyncio, token rotation, and a
manager that never imports kubernetes_asyncio."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from ome.framework import kubeconfig
from ome.framework.kubeconfig import ConfigError, ConnectionSettings, load_kubeconfig

ROOT = Path(__file__).resolve().parents[3]


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def config(
    clusters: dict[str, dict[str, Any]], users: dict[str, dict[str, Any]],
    contexts: dict[str, dict[str, Any]], current: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": k, "cluster": v} for k, v in clusters.items()],
        "users": [{"name": k, "user": v} for k, v in users.items()],
        "contexts": [{"name": k, "context": v} for k, v in contexts.items()],
    }  # fmt: skip
    if current is not None:
        doc["current-context"] = current
    return doc


async def auth(settings: ConnectionSettings) -> str | None:
    assert settings.token is not None
    return await settings.token.authorization()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_two_files_merge_first_wins_per_name_and_for_current_context(tmp_path: Path) -> None:
    first = write(tmp_path / "a", config(
        {"shared": {"server": "http://first:1"}}, {"ua": {"token": "ta"}},
        {"ctx-a": {"cluster": "shared", "user": "ua"}}, current="ctx-a",
    ))  # fmt: skip
    second = write(tmp_path / "b", config(
        {"shared": {"server": "http://second:2"}, "only-b": {"server": "http://b:3"}},
        {"ua": {"token": "overridden"}, "ub": {"token": "tb"}},
        {"ctx-b": {"cluster": "only-b", "user": "ub"}, "mixed": {"cluster": "shared", "user": "ub"}},
        current="ctx-b",
    ))  # fmt: skip
    paths = os.pathsep.join([str(first), str(tmp_path / "missing"), str(second)])
    settings = await load_kubeconfig(paths)
    assert settings.host == "http://first:1"
    assert await auth(settings) == "Bearer ta"
    # Names only the second file defines are usable; a shared name keeps the first file's entry.
    mixed = await load_kubeconfig(paths, context="mixed")
    assert (mixed.host, await auth(mixed)) == ("http://first:1", "Bearer tb")
    reversed_order = await load_kubeconfig(os.pathsep.join([str(second), str(first)]))
    assert reversed_order.host == "http://b:3"


async def test_kubeconfig_env_list_is_used_when_no_path_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write(tmp_path / "a", config({}, {}, {}, current="c"))
    second = write(tmp_path / "b", config({"k": {"server": "http://k:1"}}, {}, {"c": {"cluster": "k"}}))
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(first), str(second)]))
    settings = await load_kubeconfig()
    assert settings.host == "http://k:1"
    assert settings.token is None  # a context without a user is anonymous


async def test_context_override_picks_another_cluster_and_user(tmp_path: Path) -> None:
    path = write(tmp_path / "config", config(
        {"one": {"server": "http://one:1/"}, "two": {"server": "http://two:2"}},
        {"u1": {"token": "t1"}, "u2": {"username": "admin", "password": "pw"}},
        {"c1": {"cluster": "one", "user": "u1"}, "c2": {"cluster": "two", "user": "u2"}}, current="c1",
    ))  # fmt: skip
    default = await load_kubeconfig(str(path))
    assert default.host == "http://one:1"  # trailing slash dropped
    other = await load_kubeconfig(str(path), context="c2")
    assert other.host == "http://two:2"
    assert await auth(other) == "Basic " + base64.b64encode(b"admin:pw").decode()


async def test_data_fields_become_private_temp_files_and_win_over_file_fields(tmp_path: Path) -> None:
    (tmp_path / "ca-file.crt").write_text("ca from file")
    (tmp_path / "user.crt").write_text("cert from file")
    (tmp_path / "user.key").write_text("key from file")
    b64 = lambda text: base64.b64encode(text.encode()).decode()  # noqa: E731
    path = write(tmp_path / "config", config(
        {"k": {"server": "https://k:6443", "certificate-authority": "ca-file.crt",
               "certificate-authority-data": b64("ca from data")}},
        {"u": {"client-certificate-data": b64("cert from data"), "client-key": "user.key"}},
        {"c": {"cluster": "k", "user": "u"}}, current="c",
    ))  # fmt: skip
    settings = await load_kubeconfig(str(path))
    assert settings.ca_file is not None and settings.cert_file is not None
    assert Path(settings.ca_file).read_text() == "ca from data"
    assert Path(settings.cert_file).read_text() == "cert from data"
    assert stat.S_IMODE(os.stat(settings.ca_file).st_mode) == 0o600
    assert settings.key_file == str(tmp_path / "user.key")
    assert settings.verify_ssl is True and settings.token is None


async def test_relative_paths_resolve_against_the_kubeconfig_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "kube"
    home.mkdir()
    (home / "ca.crt").write_text("ca")
    (home / "certs").mkdir()
    (home / "certs" / "u.crt").write_text("crt")
    (home / "certs" / "u.key").write_text("key")
    (home / "token").write_text("from-file\n")
    path = write(home / "config", config(
        {"k": {"server": "https://k:6443", "certificate-authority": "ca.crt",
               "tls-server-name": "kubernetes", "proxy-url": "http://proxy:3128"}},
        {"u": {"client-certificate": "certs/u.crt", "client-key": "./certs/u.key", "tokenFile": "token"}},
        {"c": {"cluster": "k", "user": "u"}}, current="c",
    ))  # fmt: skip
    monkeypatch.chdir(tmp_path)  # not the kubeconfig's directory
    settings = await load_kubeconfig(str(path))
    assert settings.ca_file == str(home / "ca.crt")
    assert (settings.cert_file, settings.key_file) == (str(home / "certs/u.crt"), str(home / "certs/u.key"))
    assert (settings.tls_server_name, settings.proxy) == ("kubernetes", "http://proxy:3128")
    assert await auth(settings) == "Bearer from-file"


async def test_insecure_skip_tls_verify_turns_verification_off(tmp_path: Path) -> None:
    path = write(tmp_path / "config", config(
        {"k": {"server": "https://k:6443", "insecure-skip-tls-verify": True}}, {"u": {"token": "t"}},
        {"c": {"cluster": "k", "user": "u"}}, current="c",
    ))  # fmt: skip
    settings = await load_kubeconfig(str(path))
    assert settings.verify_ssl is False
    assert settings.ca_file is None


async def test_token_file_wins_over_token_and_is_reread_after_a_minute(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first")
    path = write(tmp_path / "config", config(
        {"k": {"server": "http://k:1"}}, {"u": {"token": "static", "tokenFile": str(token)}},
        {"c": {"cluster": "k", "user": "u"}}, current="c",
    ))  # fmt: skip
    clock = Clock()
    settings = await load_kubeconfig(str(path), clock=clock)
    assert await auth(settings) == "Bearer first"
    token.write_text("second")
    clock.now += 59.0
    assert await auth(settings) == "Bearer first"
    clock.now += 1.0
    assert await auth(settings) == "Bearer second"


@pytest.mark.parametrize(
    ("contexts", "context", "message"),
    [
        ({"c": {"cluster": "k", "user": "u"}}, "nope", 'context "nope" does not exist'),
        ({"c": {"cluster": "gone", "user": "u"}}, "c", 'cluster "gone" of context "c" does not exist'),
        ({"c": {"cluster": "k", "user": "ghost"}}, "c", 'user "ghost" of context "c" does not exist'),
        ({"c": {"user": "u"}}, "c", 'context "c" names no cluster'),
        ({"c": {"cluster": "k", "user": "u"}}, None, "no current-context"),
    ],
)
async def test_dangling_names_are_clear_errors(
    tmp_path: Path, contexts: dict[str, Any], context: str | None, message: str
) -> None:
    path = write(tmp_path / "config", config({"k": {"server": "http://k:1"}}, {"u": {"token": "t"}}, contexts))
    with pytest.raises(ConfigError, match=message):
        await load_kubeconfig(str(path), context=context)


async def test_missing_files_and_bad_entries_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        await load_kubeconfig(str(tmp_path / "absent"))
    path = write(tmp_path / "config", config(
        {"k": {"server": "https://k:1", "certificate-authority": "missing-ca.crt"}, "bare": {}},
        {"u": {"token": "t"}}, {"c": {"cluster": "k", "user": "u"}, "b": {"cluster": "bare"}}, current="c",
    ))  # fmt: skip
    with pytest.raises(ConfigError, match=f'certificate-authority file {tmp_path}/missing-ca.crt of cluster "k"'):
        await load_kubeconfig(str(path))
    with pytest.raises(ConfigError, match='cluster "bare" has no server'):
        await load_kubeconfig(str(path), context="b")
    (tmp_path / "broken").write_text("clusters: [{cluster: {}}]\n")
    with pytest.raises(ConfigError, match="has no name"):
        await load_kubeconfig(str(tmp_path / "broken"))


EXEC_PLUGIN = """
import json
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                  "status": {"token": "from-exec"}}))
"""


async def test_exec_user_falls_back_to_kubernetes_asyncio_with_a_refresh_loop(tmp_path: Path) -> None:
    (tmp_path / "plugin.py").write_text(EXEC_PLUGIN)
    exec_spec = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
                 "args": [str(tmp_path / "plugin.py")]}  # fmt: skip
    first = write(tmp_path / "a", config({"k": {"server": "http://k:1"}}, {}, {}, current="c"))
    second = write(tmp_path / "b", config(
        {"k": {"server": "http://ignored:2"}}, {"u": {"exec": exec_spec}},
        {"c": {"cluster": "k", "user": "u"}}, current="other",
    ))  # fmt: skip
    settings = await load_kubeconfig(os.pathsep.join([str(first), str(second)]))
    assert settings.host == "http://k:1"  # our merge, even on the fallback path
    assert await auth(settings) == "Bearer from-exec"
    assert settings.refresh is not None  # Client.from_kubeconfig runs it for the client's lifetime


async def test_a_failing_exec_plugin_is_a_config_error(tmp_path: Path) -> None:
    exec_spec = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(tmp_path / "nothing")}
    path = write(tmp_path / "config", config(
        {"k": {"server": "http://k:1"}}, {"u": {"exec": exec_spec}}, {"c": {"cluster": "k", "user": "u"}},
        current="c",
    ))  # fmt: skip
    with pytest.raises(ConfigError, match='credentials for user "u"'):
        await load_kubeconfig(str(path))


async def test_incluster_reads_the_environment_token_and_ca_and_rereads_a_rotated_token(tmp_path: Path) -> None:
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("sa-1")
    ca.write_text("ca")
    clock = Clock()
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    settings = kubeconfig.incluster(env, token_path=str(token), ca_path=str(ca), clock=clock)
    assert (settings.host, settings.ca_file) == ("https://[fd00::1]:443", str(ca))
    assert await auth(settings) == "Bearer sa-1"
    token.write_text("sa-2")
    clock.now += 30.0
    assert await auth(settings) == "Bearer sa-1"  # at most one read a minute
    clock.now += 30.0
    assert await auth(settings) == "Bearer sa-2"
    token.unlink()  # a failed re-read keeps the last good token
    clock.now += 60.0
    assert await auth(settings) == "Bearer sa-2"
    v4 = kubeconfig.incluster({**env, "KUBERNETES_SERVICE_HOST": "10.0.0.1"}, token_path=str(ca), ca_path=str(ca))
    assert v4.host == "https://10.0.0.1:443"


def test_incluster_errors_name_what_is_missing(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_HOST"):
        kubeconfig.incluster({}, token_path=str(tmp_path / "t"), ca_path=str(tmp_path / "c"))
    (tmp_path / "c").write_text("ca")
    with pytest.raises(ConfigError, match=f"token file {tmp_path}/t"):
        kubeconfig.incluster(env, token_path=str(tmp_path / "t"), ca_path=str(tmp_path / "c"))
    (tmp_path / "t").write_text("x")
    (tmp_path / "empty").write_text("")
    with pytest.raises(ConfigError, match="CA file"):
        kubeconfig.incluster(env, token_path=str(tmp_path / "t"), ca_path=str(tmp_path / "empty"))


async def test_a_kubernetes_asyncio_configuration_is_adapted_with_its_live_token() -> None:
    from kubernetes_asyncio.client import Configuration  # noqa: PLC0415

    configuration = Configuration(host="https://k:6443", api_key={"BearerToken": "Bearer one"})
    configuration.ssl_ca_cert, configuration.verify_ssl = "/ca", False
    configuration.tls_server_name = "name"
    settings = kubeconfig.from_configuration(configuration)
    assert (settings.host, settings.ca_file, settings.verify_ssl, settings.tls_server_name) == (
        "https://k:6443", "/ca", False, "name",
    )
    assert await auth(settings) == "Bearer one"
    configuration.api_key["BearerToken"] = "Bearer two"  # an exec refresh updates it in place
    assert await auth(settings) == "Bearer two"
    assert await auth(kubeconfig.from_configuration(Configuration(host="http://k:1"))) is None


def test_the_manager_never_imports_kubernetes_asyncio(tmp_path: Path) -> None:
    """Importing the manager and connecting with certificates, a token or in-cluster loads none of it."""
    pki = tmp_path / "pki"
    pki.mkdir()
    for name in ("ca.crt", "u.crt", "u.key", "token"):
        (pki / name).write_text("x")
    data = base64.b64encode(b"x").decode()
    path = write(tmp_path / "config", config(
        {"k": {"server": "https://127.0.0.1:9", "certificate-authority-data": data}},
        {"certs": {"client-certificate": str(pki / "u.crt"), "client-key-data": data},
         "token": {"token": "t"}},
        {"certs": {"cluster": "k", "user": "certs"}, "token": {"cluster": "k", "user": "token"}},
        current="certs",
    ))  # fmt: skip
    script = textwrap.dedent(f"""
        import asyncio, json, sys
        import ome.cmd.manager
        from ome.framework import kubeconfig
        asyncio.run(kubeconfig.load_kubeconfig({str(path)!r}))
        asyncio.run(kubeconfig.load_kubeconfig({str(path)!r}, context="token"))
        env = {{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}}
        kubeconfig.incluster(env, token_path={str(pki / "token")!r}, ca_path={str(pki / "ca.crt")!r})
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("kubernetes_asyncio"))))
    """)
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


async def test_the_manager_exits_1_naming_a_bad_kubeconfig(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ome.cmd import manager  # noqa: PLC0415
    from ome.framework import log_setup  # noqa: PLC0415

    path = write(tmp_path / "config", config(
        {"k": {"server": "http://127.0.0.1:9"}}, {}, {"c": {"cluster": "k", "user": "ghost"}}, current="c",
    ))  # fmt: skip
    args = manager.parse_args(["--kubeconfig", str(path), "--webhook-port", "0",
                               "--metrics-bind-address", "0", "--health-probe-bind-address", "0"])
    log_setup.configure_from_zap_flags(args)
    assert await manager.run(args) == 1  # not raised
    err = capsys.readouterr().err
    assert 'ome-manager: unable to get kubeconfig: user "ghost" of context "c" does not exist' in err
    assert "Traceback" not in err
