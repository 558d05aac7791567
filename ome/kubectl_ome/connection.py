"""kubectl's connection flags and the API client they describe.

Every command takes the standard kubeconfig flags (kubectl-ome overview, "Global flags"): they pick the
kubeconfig, context, cluster and user, may override the server, token and TLS files, impersonate a user
and groups, and bound each request. `--ome-namespace` names where OME runs. The flags are SUPPRESSed so
they can appear before or after the command, as with kubectl.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config.config_exception import ConfigException
from kubernetes_asyncio.config.kube_config import ConfigNode, KubeConfigLoader, KubeConfigMerger

from ome.config import durations
from ome.framework.client import Client
from ome.framework.transport import ClientSettings, RetryPolicy, Transport
from ome.kubectl_ome.failures import CliError

USER_AGENT: Final = "kubectl-ome/0.1"
DEFAULT_OME_NAMESPACE: Final = "ome"
_SECONDS: Final = re.compile(r"^\d+(\.\d+)?$")
_NAME: Final = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def add_connection_flags(parser: argparse.ArgumentParser) -> None:
    """kubectl's standard flags; defaults are SUPPRESSed so a later parser does not reset them."""
    sup = argparse.SUPPRESS
    add = parser.add_argument
    add("-n", "--namespace", default=sup, help="The namespace to use (default: the context's, else default)")
    add("--kubeconfig", default=sup, help="Path to the kubeconfig file")
    add("--context", default=sup, help="The kubeconfig context to use")
    add("--cluster", default=sup, help="The kubeconfig cluster to use")
    add("--user", default=sup, help="The kubeconfig user to use")
    add("-s", "--server", default=sup, help="The address and port of the Kubernetes API server")
    add("--token", default=sup, help="Bearer token for authentication to the API server")
    add("--certificate-authority", default=sup, help="Path to a cert file for the certificate authority")
    add("--client-certificate", default=sup, help="Path to a client certificate file for TLS")
    add("--client-key", default=sup, help="Path to a client key file for TLS")
    add("--tls-server-name", default=sup, help="Server name to use for server certificate validation")
    add(
        "--insecure-skip-tls-verify",
        action="store_true",
        default=sup,
        help="Don't check the server's certificate (insecure)",
    )
    add("--as", dest="as_user", default=sup, help="Username to impersonate for the operation")
    add("--as-uid", default=sup, help="UID to impersonate for the operation")
    add("--as-group", action="append", default=sup, help="Group to impersonate (repeatable)")
    add(
        "--as-user-extra",
        action="append",
        default=sup,
        help="User extra to impersonate, KEY=VALUE (repeatable)",
    )
    add(
        "--request-timeout",
        default=sup,
        help="How long to wait for each API request, as in 10s (0: no limit)",
    )
    add("--cache-dir", default=sup, help="Default cache directory (default: ~/.kube/cache)")
    add("--disable-compression", action="store_true", default=sup, help="Opt out of response compression")


def add_ome_namespace(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ome-namespace",
        default=DEFAULT_OME_NAMESPACE,
        help="Namespace where the OME control plane is installed (default: ome)",
    )


def parse_duration(value: str) -> float:
    """Go's durations (`10s`, `1m0s`, `1h30m`, `500ms`) or plain seconds; CliError when malformed."""
    text = value.strip()
    if _SECONDS.match(text):
        return float(text)
    if text.endswith("ms") and _SECONDS.match(text[:-2]):
        return float(text[:-2]) / 1000
    seconds = durations.parse_duration(text)
    if seconds is None:
        raise CliError(f'invalid duration "{value}"; use a number with a unit, such as 10s or 1m')
    return seconds


@dataclass(frozen=True, slots=True)
class Options:
    """The connection flags after parsing (None: not given)."""

    kubeconfig: str | None = None
    context: str | None = None
    cluster: str | None = None
    user: str | None = None
    server: str | None = None
    token: str | None = None
    certificate_authority: str | None = None
    client_certificate: str | None = None
    client_key: str | None = None
    tls_server_name: str | None = None
    insecure: bool = False
    as_user: str | None = None
    as_uid: str | None = None
    as_groups: tuple[str, ...] = ()
    as_extra: tuple[str, ...] = ()
    request_timeout: float = 0.0
    namespace: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        def get(key: str) -> Any:
            return getattr(args, key, None)  # SUPPRESSed flags are absent unless given

        raw_timeout = get("request_timeout")
        timeout = parse_duration(str(raw_timeout)) if raw_timeout else 0.0
        return cls(
            kubeconfig=get("kubeconfig"),
            context=get("context"),
            cluster=get("cluster"),
            user=get("user"),
            server=get("server"),
            token=get("token"),
            certificate_authority=get("certificate_authority"),
            client_certificate=get("client_certificate"),
            client_key=get("client_key"),
            tls_server_name=get("tls_server_name"),
            insecure=bool(get("insecure_skip_tls_verify")),
            as_user=get("as_user"),
            as_uid=get("as_uid"),
            as_groups=tuple(get("as_group") or ()),
            as_extra=tuple(get("as_user_extra") or ()),
            request_timeout=timeout,
            namespace=get("namespace"),
        )

    def impersonation_headers(self) -> list[tuple[str, str]]:
        headers: list[tuple[str, str]] = []
        if self.as_user:
            headers.append(("Impersonate-User", self.as_user))
        if self.as_uid:
            headers.append(("Impersonate-Uid", self.as_uid))
        headers += [("Impersonate-Group", g) for g in self.as_groups]
        for extra in self.as_extra:
            key, sep, value = extra.partition("=")
            if not sep or not key:
                raise CliError(f'invalid --as-user-extra "{extra}"; use KEY=VALUE')
            headers.append((f"Impersonate-Extra-{key}", value))
        if (self.as_groups or self.as_extra or self.as_uid) and not self.as_user:
            raise CliError("requesting uid, groups or user-extra for impersonation requires --as")
        return headers


def kubeconfig_path(flag: str | None) -> str:
    """The flag, else $KUBECONFIG (files joined by the path separator, merged as kubectl merges them),
    else ~/.kube/config."""
    if flag:
        return flag
    return os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")


def load_kubeconfig(paths: str) -> ConfigNode | None:
    """The kubeconfig files in `paths` merged by kubernetes-asyncio's loader (the first entry of a name
    wins; each entry remembers its file, so relative certificate paths resolve next to it); None when
    no file exists or one is not a kubeconfig."""
    if not _existing(paths):
        return None  # the merger would log a warning of its own
    try:
        merged = KubeConfigMerger(paths).config
    except (OSError, yaml.YAMLError, AttributeError, TypeError, ConfigException):
        return None
    return merged if merged is not None and isinstance(merged.value, dict) else None


def _existing(paths: str) -> list[Path]:
    found = (Path(os.path.expanduser(p)) for p in paths.split(os.pathsep) if p)
    return [p for p in found if p.exists()]


def _plain(config: ConfigNode | Mapping[str, Any] | None) -> dict[str, Any]:
    """current-context and contexts as plain dicts (the merger wraps each entry in a ConfigNode)."""
    value = config.value if isinstance(config, ConfigNode) else dict(config or {})
    contexts = [e.value if isinstance(e, ConfigNode) else e for e in value.get("contexts") or []]
    return {**value, "contexts": contexts}


def context_namespace(config: ConfigNode | Mapping[str, Any], context: str | None) -> str:
    """The namespace of `context` (else the current context) in a kubeconfig, else "default"."""
    plain = _plain(config)
    name = context or plain.get("current-context")
    for entry in plain["contexts"]:
        if entry.get("name") == name:
            return str((entry.get("context") or {}).get("namespace") or "default")
    return "default"


def resolve_namespace(flag: str | None, path: str, context: str | None) -> str:
    if flag:
        return flag
    return context_namespace(load_kubeconfig(path) or {}, context)


def context_name(config: ConfigNode | Mapping[str, Any] | None, flag: str | None) -> str:
    if flag:
        return flag
    return str(_plain(config).get("current-context") or "")


def overridden(config: Mapping[str, Any], opts: Options) -> dict[str, Any]:
    """The kubeconfig with --cluster/--user swapped into the selected context (pure)."""
    out = copy.deepcopy(_plain(config))
    name = opts.context or out.get("current-context")
    for entry in out["contexts"]:
        if entry.get("name") == name:
            ctx = entry.setdefault("context", {})
            if opts.cluster:
                ctx["cluster"] = opts.cluster
            if opts.user:
                ctx["user"] = opts.user
    return out


def _with_overrides(merged: ConfigNode, opts: Options) -> ConfigNode:
    """`merged` with --cluster/--user in the selected context; the entries keep their files."""
    if not (opts.cluster or opts.user):
        return merged
    swapped = {e["name"]: e for e in overridden(merged.value, opts)["contexts"] if "name" in e}
    contexts = [
        ConfigNode(f"contexts[name={e.value.get('name')}]", swapped[e.value["name"]], e.path)
        if isinstance(e, ConfigNode) and e.value.get("name") in swapped
        else e
        for e in merged.value.get("contexts") or []
    ]
    return ConfigNode(merged.name, {**merged.value, "contexts": contexts}, merged.path)


def apply_overrides(configuration: Configuration, opts: Options) -> None:
    """--server, --token and the TLS flags win over the kubeconfig's values."""
    if opts.server:
        configuration.host = opts.server if "://" in opts.server else f"https://{opts.server}"
    if opts.token:
        configuration.api_key = {"BearerToken": f"Bearer {opts.token}"}
        configuration.api_key_prefix = {}
        configuration.cert_file = configuration.key_file = None
    if opts.certificate_authority:
        configuration.ssl_ca_cert = opts.certificate_authority
    if opts.client_certificate:
        configuration.cert_file = opts.client_certificate
    if opts.client_key:
        configuration.key_file = opts.client_key
    if opts.tls_server_name:
        configuration.tls_server_name = opts.tls_server_name
    if opts.insecure:
        configuration.verify_ssl = False


class _ImpersonatingTransport(Transport):
    """Adds the Impersonate-* headers kubectl sends for --as, --as-uid, --as-group, --as-user-extra."""

    def __init__(
        self, configuration: Configuration, settings: ClientSettings, headers: Sequence[tuple[str, str]]
    ) -> None:
        super().__init__(configuration, settings)
        self._impersonate = list(headers)

    async def _headers(self, accept: str, content_type: str | None) -> dict[str, str]:
        headers = await super()._headers(accept, content_type)
        # aiohttp accepts one value per key in a dict; kubectl sends one header per group, and the
        # apiserver also accepts them comma-joined under one key.
        for key, value in self._impersonate:
            headers[key] = f"{headers[key]},{value}" if key in headers else value
        return headers


@dataclass(slots=True)
class Connection:
    client: Client
    namespace: str
    context: str
    options: Options = field(default_factory=Options)


async def connect(opts: Options, *, per_request_timeout: float | None = None) -> Connection:
    """The client the flags describe; a bad kubeconfig or flag is one CliError line."""
    path = kubeconfig_path(opts.kubeconfig)
    config = load_kubeconfig(path)
    if config is None and not opts.server:
        if not _existing(path):
            raise CliError(f"kubeconfig {path} does not exist")
        raise CliError(f"cannot load kubeconfig {path}")
    configuration = Configuration()
    if config is not None:
        try:
            loader = KubeConfigLoader(_with_overrides(config, opts), active_context=opts.context,
                                      config_base_path=None)
            await loader.load_and_set(configuration)
        except Exception as exc:  # the loader raises its own types, or ValueError/KeyError/AssertionError
            if not opts.server:
                raise CliError(f"cannot load kubeconfig {path}: {exc}") from exc
    apply_overrides(configuration, opts)
    limits = [t for t in (opts.request_timeout or None, per_request_timeout) if t]
    settings = ClientSettings(
        user_agent=USER_AGENT, retry=RetryPolicy(max_retries=2), timeout=min(limits) if limits else 30.0
    )
    headers = opts.impersonation_headers()
    transport = _ImpersonatingTransport(configuration, settings, list(headers))
    namespace = opts.namespace or context_namespace(config or {}, opts.context)
    if not _NAME.match(namespace):
        raise CliError(f'invalid namespace "{namespace}"')
    return Connection(Client(transport), namespace, context_name(config, opts.context), opts)
