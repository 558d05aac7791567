"""Where the apiserver is and how to authenticate: kubeconfig files and the pod's service account.

Our own loader instead of kubernetes-asyncio's: importing `kubernetes_asyncio.config` imports its whole
generated client (every model and API class), about 60 MiB of RSS the manager never uses. Transport only
needs the `ConnectionSettings` below. Users with `exec` or `auth-provider` are the exception: their
credential plugins are kubernetes-asyncio's job, so that branch alone imports it, lazily.

Kubeconfig rules followed (kubectl's): a $KUBECONFIG-style list of files, missing ones skipped; per
cluster, user and context name the first file that defines it wins, and so does the first
current-context; relative file paths are relative to the file that holds them; `*-data` fields win over
their file fields and are written to private temp files removed at exit; `tokenFile` is re-read at most
every minute (bound tokens rotate) and wins over `token`, which is then only its fallback.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import dataclasses
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

import structlog
import yaml

if TYPE_CHECKING:
    from kubernetes_asyncio.client import Configuration

SERVICE_TOKEN_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount/token"
SERVICE_CA_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
TOKEN_REREAD_PERIOD: Final = 60.0
"""Seconds between reads of a token file (kubernetes-asyncio's and client-go's in-cluster period)."""
DEFAULT_KUBECONFIG: Final = "~/.kube/config"

Entry = dict[str, Any]
Clock = Callable[[], float]
_log = structlog.get_logger(__name__)


class ConfigError(ValueError):
    """The kubeconfig or the in-cluster environment cannot give a connection; the message says why."""


class TokenSource(Protocol):
    async def authorization(self) -> str | None:
        """The Authorization header value to send now, or None for none."""
        ...


@dataclass(frozen=True, slots=True)
class StaticToken:
    header: str
    """The whole header value, `Bearer <token>` or `Basic <base64>`."""

    async def authorization(self) -> str | None:
        return self.header


class TokenFile:
    """A bearer token read from a file, read again once `period` seconds have passed since the last read.

    A failed re-read keeps the last good token (client-go does the same) and logs; the apiserver will
    say 401 if it really expired.
    """

    def __init__(
        self, path: str, *, period: float = TOKEN_REREAD_PERIOD, clock: Clock = time.monotonic,
        fallback: str | None = None,
    ) -> None:  # fmt: skip
        self._path, self._period, self._clock = path, period, clock
        try:
            self._header = _bearer_from_file(path)
        except ConfigError:
            if fallback is None:
                raise
            self._header = f"Bearer {fallback}"
        self._read_at = clock()

    async def authorization(self) -> str | None:
        now = self._clock()
        if now - self._read_at >= self._period:
            self._read_at = now
            try:
                self._header = _bearer_from_file(self._path)
            except ConfigError as exc:
                _log.warning("Keeping the last token: cannot re-read the token file", error=str(exc))
        return self._header


@dataclass(frozen=True, slots=True)
class TokenHook:
    hook: Callable[[], Awaitable[str | None]]

    async def authorization(self) -> str | None:
        return await self.hook()


@dataclass(frozen=True, kw_only=True, slots=True)
class ConnectionSettings:
    """What `transport.Transport` needs to reach and authenticate to one apiserver."""

    host: str
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    verify_ssl: bool = True
    disable_strict_ssl_verification: bool = False
    tls_server_name: str | None = None
    proxy: str | None = None
    proxy_headers: Mapping[str, str] | None = None
    token: TokenSource | None = None
    refresh: Callable[[], Coroutine[Any, Any, None]] | None = field(default=None, compare=False)
    """A loop the client runs in the background for its lifetime (exec and GCP token refresh)."""


def from_configuration(configuration: Configuration) -> ConnectionSettings:
    """Adapt a kubernetes-asyncio `Configuration` (kubectl-ome, tests); its token is read per request."""

    def get(name: str, default: Any = None) -> Any:  # duck-typed: no import of kubernetes_asyncio here
        return getattr(configuration, name, default)

    async def bearer() -> str | None:
        # auth_settings() runs the refresh hook, which re-reads a rotated service-account token.
        auth = await configuration.auth_settings()
        value = (auth.get("BearerToken") or {}).get("value")
        return str(value) if value else None

    return ConnectionSettings(
        host=str(configuration.host), ca_file=get("ssl_ca_cert"), cert_file=get("cert_file"),
        key_file=get("key_file"), verify_ssl=bool(get("verify_ssl", True)),
        disable_strict_ssl_verification=bool(get("disable_strict_ssl_verification", False)),
        tls_server_name=get("tls_server_name"), proxy=get("proxy"), proxy_headers=get("proxy_headers"),
        token=TokenHook(bearer),
    )  # fmt: skip


# ---------------------------------------------------------------------------------------- in-cluster


def incluster(
    environ: Mapping[str, str] | None = None, *, token_path: str | None = None, ca_path: str | None = None,
    clock: Clock = time.monotonic,
) -> ConnectionSettings:  # fmt: skip
    """The pod's service account: KUBERNETES_SERVICE_HOST/PORT, its token (re-read every minute) and CA."""
    env = os.environ if environ is None else environ
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise ConfigError("not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set")
    token_path = token_path or SERVICE_TOKEN_PATH
    ca_path = ca_path or SERVICE_CA_PATH
    if not _non_empty_file(ca_path):
        raise ConfigError(f"service account CA file {ca_path} is missing or empty")
    return ConnectionSettings(
        host=f"https://{join_host_port(host, port)}", ca_file=ca_path,
        token=TokenFile(token_path, clock=clock),
    )  # fmt: skip


def join_host_port(host: str, port: str) -> str:
    """Go's net.JoinHostPort: an IPv6 address (or one with a zone) goes in brackets."""
    return f"[{host}]:{port}" if ":" in host or "%" in host else f"{host}:{port}"


def _bearer_from_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as exc:
        raise ConfigError(f"cannot read token file {path}: {exc.strerror}") from exc
    if not token:
        raise ConfigError(f"token file {path} is empty")
    return f"Bearer {token}"


def _non_empty_file(path: str) -> bool:
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False


# ---------------------------------------------------------------------------------------- kubeconfig


@dataclass(frozen=True, slots=True)
class Merged:
    """Files merged kubectl's way; every relative path already made absolute."""

    clusters: dict[str, Entry]
    users: dict[str, Entry]
    contexts: dict[str, Entry]
    current_context: str | None


@dataclass(frozen=True, slots=True)
class Selected:
    context: str
    cluster_name: str
    cluster: Entry
    user_name: str | None
    user: Entry


_CLUSTER_PATHS: Final = ("certificate-authority",)
_USER_PATHS: Final = ("client-certificate", "client-key", "tokenFile")


def kubeconfig_paths(paths: str | None) -> list[str]:
    """`paths` (a flag's value, $KUBECONFIG, or ~/.kube/config), split on os.pathsep, ~ expanded."""
    value = paths or os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
    return [os.path.expanduser(p) for p in value.split(os.pathsep) if p]


def read_files(paths: Sequence[str]) -> list[tuple[str, Mapping[str, Any]]]:
    """Parse each existing file; none existing is an error."""
    out: list[tuple[str, Mapping[str, Any]]] = []
    for path in paths:
        if not os.path.exists(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                doc = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read kubeconfig {path}: {exc}") from exc
        if doc is not None and not isinstance(doc, Mapping):
            raise ConfigError(f"kubeconfig {path} is not a mapping")
        out.append((path, doc or {}))
    if not out:
        raise ConfigError(f"kubeconfig {os.pathsep.join(paths)} does not exist")
    return out


def merge(files: Iterable[tuple[str, Mapping[str, Any]]]) -> Merged:
    """kubectl's merge: the first file to define a name, or current-context, wins."""
    clusters: dict[str, Entry] = {}
    users: dict[str, Entry] = {}
    contexts: dict[str, Entry] = {}
    current: str | None = None
    for path, doc in files:
        base = os.path.dirname(os.path.abspath(path))
        _merge_section(clusters, doc, "clusters", "cluster", path, base, _CLUSTER_PATHS)
        _merge_section(users, doc, "users", "user", path, base, _USER_PATHS)
        _merge_section(contexts, doc, "contexts", "context", path, base, ())
        current = current or doc.get("current-context") or None
    return Merged(clusters, users, contexts, current)


def _merge_section(
    into: dict[str, Entry], doc: Mapping[str, Any], section: str, key: str, path: str, base: str,
    path_fields: Sequence[str],
) -> None:  # fmt: skip
    for item in doc.get(section) or []:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise ConfigError(f"kubeconfig {path}: an entry of {section} has no name")
        body = item.get(key) or {}
        if not isinstance(body, Mapping):
            raise ConfigError(f"kubeconfig {path}: {key} {item['name']!r} is not a mapping")
        into.setdefault(item["name"], _resolved(dict(body), base, path_fields))


def _resolved(body: Entry, base: str, path_fields: Sequence[str]) -> Entry:
    for name in path_fields:
        if isinstance(body.get(name), str) and body[name]:
            body[name] = os.path.normpath(os.path.join(base, os.path.expanduser(body[name])))
    exec_spec = body.get("exec")
    # kubectl resolves an exec command only when it is a relative path, not a bare name looked up in $PATH.
    if isinstance(exec_spec, Mapping) and isinstance(command := exec_spec.get("command"), str):
        if os.sep in command and not os.path.isabs(command):
            body["exec"] = {**exec_spec, "command": os.path.normpath(os.path.join(base, command))}
    return body


def select(merged: Merged, context: str | None = None) -> Selected:
    """The context given, else current-context, with its cluster and user; a dangling name is an error."""
    name = context or merged.current_context
    if not name:
        raise ConfigError("no context: the kubeconfig has no current-context and none was given")
    ctx = merged.contexts.get(name)
    if ctx is None:
        raise ConfigError(f'context "{name}" does not exist in the kubeconfig')
    cluster_name = ctx.get("cluster")
    if not cluster_name:
        raise ConfigError(f'context "{name}" names no cluster')
    cluster = merged.clusters.get(cluster_name)
    if cluster is None:
        raise ConfigError(f'cluster "{cluster_name}" of context "{name}" does not exist in the kubeconfig')
    user_name = ctx.get("user") or None
    user: Entry = {}
    if user_name is not None:
        if user_name not in merged.users:
            raise ConfigError(f'user "{user_name}" of context "{name}" does not exist in the kubeconfig')
        user = merged.users[user_name]
    return Selected(name, cluster_name, cluster, user_name, user)


def needs_plugin(user: Mapping[str, Any]) -> bool:
    """Credential plugins (exec, auth-provider) are left to kubernetes-asyncio."""
    return bool(user.get("exec") or user.get("auth-provider"))


def settings_for(chosen: Selected, *, clock: Clock = time.monotonic) -> ConnectionSettings:
    """Connection settings for a context whose user needs no plugin."""
    cluster, user = chosen.cluster, chosen.user
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise ConfigError(f'cluster "{chosen.cluster_name}" has no server')
    host = server.rstrip("/")
    tls = host.startswith("https")
    what = f'cluster "{chosen.cluster_name}"'
    who = f'user "{chosen.user_name}"'
    return ConnectionSettings(
        host=host,
        ca_file=_file_or_data(cluster, "certificate-authority", what) if tls else None,
        cert_file=_file_or_data(user, "client-certificate", who) if tls else None,
        key_file=_file_or_data(user, "client-key", who) if tls else None,
        verify_ssl=not cluster.get("insecure-skip-tls-verify", False),
        tls_server_name=cluster.get("tls-server-name") or None,
        proxy=cluster.get("proxy-url") or None,
        token=_token(user, clock),
    )


def _token(user: Mapping[str, Any], clock: Clock) -> TokenSource | None:
    token = user.get("token") or None
    if user.get("tokenFile"):
        return TokenFile(str(user["tokenFile"]), clock=clock, fallback=token)
    if token:
        return StaticToken(f"Bearer {token}")
    if "username" in user and "password" in user:
        basic = base64.b64encode(f"{user['username']}:{user['password']}".encode()).decode()
        return StaticToken(f"Basic {basic}")
    return None


def _file_or_data(entry: Mapping[str, Any], name: str, owner: str) -> str | None:
    """The file `name` names, or its `name-data` (base64) written to a private temp file; data wins."""
    data = entry.get(f"{name}-data")
    if data:
        try:
            content = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError, TypeError) as exc:
            raise ConfigError(f"{name}-data of {owner} is not valid base64") from exc
        return _temp_file(content)
    path = entry.get(name)
    if not path:
        return None
    if not os.path.isfile(path):
        raise ConfigError(f"{name} file {path} of {owner} does not exist")
    return str(path)


_temp_files: dict[bytes, str] = {}


def _temp_file(content: bytes) -> str:
    """One 0600 file per distinct content, removed at exit (kubernetes-asyncio does the same)."""
    if content in _temp_files:
        return _temp_files[content]
    if not _temp_files:
        atexit.register(_remove_temp_files)
    fd, name = tempfile.mkstemp(prefix="ome-kubeconfig-")
    with os.fdopen(fd, "wb") as f:
        f.write(content)
    _temp_files[content] = name
    return name


def _remove_temp_files() -> None:
    for name in _temp_files.values():
        try:
            os.remove(name)
        except OSError:
            pass
    _temp_files.clear()


async def load_kubeconfig(
    paths: str | None = None, *, context: str | None = None, clock: Clock = time.monotonic
) -> ConnectionSettings:
    """`paths` (else $KUBECONFIG, else ~/.kube/config) merged, for `context` (else current-context)."""
    merged = merge(read_files(kubeconfig_paths(paths)))
    chosen = select(merged, context)
    if needs_plugin(chosen.user):
        return await _load_with_plugin(merged, chosen)
    return settings_for(chosen, clock=clock)


async def _load_with_plugin(merged: Merged, chosen: Selected) -> ConnectionSettings:
    """kubernetes-asyncio's loader for exec and auth-provider users, fed our merged, resolved config."""
    # Imported here only: these users are rare and the import costs ~60 MiB (module docstring).
    from kubernetes_asyncio.client import Configuration  # noqa: PLC0415
    from kubernetes_asyncio.config import kube_config  # noqa: PLC0415

    config = {
        "current-context": chosen.context,
        "clusters": [{"name": k, "cluster": v} for k, v in merged.clusters.items()],
        "users": [{"name": k, "user": v} for k, v in merged.users.items()],
        "contexts": [{"name": k, "context": v} for k, v in merged.contexts.items()],
    }
    configuration = Configuration()
    # config_base_path="": paths are absolute already; kubernetes-asyncio would otherwise use the cwd.
    loader = kube_config.KubeConfigLoader(config, active_context=chosen.context, config_base_path="")
    try:
        await loader.load_and_set(configuration)
    except Exception as exc:  # its own exception types, or ValueError/KeyError from a bad plugin answer
        raise ConfigError(f'cannot get credentials for user "{chosen.user_name}": {exc}') from exc
    settings = from_configuration(configuration)
    if loader.provider == "gcp" or "exec" in chosen.user:

        async def refresh() -> None:
            await kube_config.refresh_token(loader, configuration)

        return dataclasses.replace(settings, refresh=refresh)
    return settings
