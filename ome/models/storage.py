"""`spec.storage.storageUri` parsing: which scheme, and the parts each scheme needs. Pure functions only.

The forms are the documented ones: `hf://{model-id}[@{revision}]`, `local://{path}`,
`pvc://{pvc-name}/{sub-path}` (BaseModel) or `pvc://{namespace}:{pvc-name}/{sub-path}` (ClusterBaseModel),
`vendor://...`, `oci://n/{namespace}/b/{bucket}/o/{prefix}`. Anything else parses as `Unsupported`, so the
agent can fail the model with a clear reason instead of leaving it `Updating`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

HF_DEFAULT_REVISION: Final = "main"


class StorageUriError(ValueError):
    """A storageUri that does not have its scheme's form."""


@dataclass(frozen=True, slots=True)
class HfSource:
    repo_id: str
    revision: str = HF_DEFAULT_REVISION


@dataclass(frozen=True, slots=True)
class LocalSource:
    path: str


@dataclass(frozen=True, slots=True)
class PvcSource:
    claim: str
    sub_path: str
    namespace: str | None = None
    """Only a ClusterBaseModel names the claim's namespace; a BaseModel uses its own."""


@dataclass(frozen=True, slots=True)
class VendorSource:
    path: str


@dataclass(frozen=True, slots=True)
class Unsupported:
    scheme: str


Source = HfSource | LocalSource | PvcSource | VendorSource | Unsupported


def scheme_of(uri: str) -> str:
    scheme, sep, _ = uri.partition("://")
    return scheme.lower() if sep else ""


def parse(uri: str) -> Source:
    """The source a storageUri names; raises StorageUriError for a malformed URI of a known scheme."""
    scheme = scheme_of(uri)
    rest = uri.partition("://")[2]
    if scheme == "hf":
        return _parse_hf(uri, rest)
    if scheme == "local":
        if not rest:
            raise StorageUriError(f"invalid local storage URI {uri!r}: missing path")
        return LocalSource("/" + rest.lstrip("/"))
    if scheme == "pvc":
        return _parse_pvc(uri, rest)
    if scheme == "vendor":
        return VendorSource(rest)
    return Unsupported(scheme or uri)


def _parse_hf(uri: str, rest: str) -> HfSource:
    repo_id, _, revision = rest.partition("@")
    repo_id = repo_id.strip("/")
    if not repo_id or repo_id.count("/") > 1:
        raise StorageUriError(f"invalid Hugging Face storage URI {uri!r}: want hf://{{model-id}}[@{{revision}}]")
    return HfSource(repo_id, revision or HF_DEFAULT_REVISION)


_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def _pvc_problem(rest: str) -> str | None:
    """Why `pvc://<rest>` is malformed, in v1.3's words (what follows `invalid PVC storage URI format: `)."""
    if not rest:
        return "missing content after prefix"
    claim_part, slash, sub_path = rest.partition("/")
    if not slash:
        return "missing subpath"
    namespace, colon, claim = claim_part.partition(":")
    if colon:
        if not namespace:
            return "empty namespace before colon"
        if not claim:
            return "empty PVC name after colon"
        if ":" in claim:
            return "multiple colons not allowed in namespace:pvc-name"
        if not _NAMESPACE.match(namespace):
            return (f'invalid namespace "{namespace}" (must be lowercase alphanumeric with hyphens, '
                    "max 63 chars)")
    elif not claim_part:
        return "missing PVC name"
    if not sub_path.strip("/"):
        return "missing subpath"
    return None


def _parse_pvc(uri: str, rest: str) -> PvcSource:
    problem = _pvc_problem(rest)
    if problem is not None:
        raise StorageUriError(f"invalid PVC storage URI {uri!r}: {problem}")
    claim_part, _, sub_path = rest.partition("/")
    namespace, colon, claim = claim_part.partition(":")
    if not colon:
        namespace, claim = "", claim_part
    return PvcSource(claim, sub_path.strip("/"), namespace or None)


def storage_of(model: dict[str, Any]) -> dict[str, Any]:
    return ((model.get("spec") or {}).get("storage")) or {}


def is_pvc(model: dict[str, Any]) -> bool:
    return scheme_of(storage_of(model).get("storageUri") or "") == "pvc"


def target_dir(model: dict[str, Any], models_root: str) -> str:
    """Where the weights live on the node: `storage.path`, else the local:// path, else under the root."""
    storage = storage_of(model)
    if path := storage.get("path"):
        return str(path)
    uri = storage.get("storageUri") or ""
    source = parse(uri)
    if isinstance(source, LocalSource):
        return source.path
    return f"{models_root.rstrip('/')}/{uri.partition('://')[2].strip('/')}"
