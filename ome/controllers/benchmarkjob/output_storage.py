"""genai-bench's arguments for `spec.outputLocation` (benchmark-output-storage.md). Pure.

Each backend's URI form and the parameters it reads; unknown parameter keys are ignored, as documented.
A `pvc://` location is written to a claim mounted in the pod; every other backend uploads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ome.models import storage

OUTPUT_VOLUME: Final = "benchmark-output-storage"


class OutputStorageError(ValueError):
    """An outputLocation OME can't write to; the message says why."""


@dataclass(frozen=True, slots=True)
class ClaimOutput:
    claim: str
    sub_path: str


def _param(args: list[str], params: Mapping[str, str], key: str, flag: str) -> None:
    if key in params:
        args += [flag, str(params[key])]


def claim_of(uri: str) -> ClaimOutput | None:
    if storage.scheme_of(uri) != "pvc":
        return None
    try:
        source = storage.parse(uri)
    except storage.StorageUriError as exc:
        raise OutputStorageError(str(exc)) from exc
    assert isinstance(source, storage.PvcSource)
    # A namespace in the URI is ignored: a pod mounts only claims of its own namespace.
    return ClaimOutput(source.claim, source.sub_path)


def storage_args(uri: str, params: Mapping[str, str] | None) -> list[str]:
    params = params or {}
    scheme = storage.scheme_of(uri)
    rest = uri.partition("://")[2]
    builder = _BUILDERS.get(scheme)
    if builder is None:
        raise OutputStorageError(f"unsupported storage type: {scheme or uri}")
    return builder(uri, rest, params)


def _pvc(uri: str, _rest: str, _params: Mapping[str, str]) -> list[str]:
    claim = claim_of(uri)
    assert claim is not None
    return ["--experiment-base-dir", "/" + claim.sub_path]


def _oci(uri: str, rest: str, params: Mapping[str, str]) -> list[str]:
    parts = rest.split("/")
    if len(parts) < 6 or parts[0] != "n" or parts[2] != "b" or parts[4] != "o":
        raise OutputStorageError("invalid OCI storage URI format. Expected: oci://n/{namespace}/b/{bucket}/o/"
                                 "{object_path}")
    args = ["--upload-results", "--namespace", parts[1], "--storage-bucket", parts[3],
            "--storage-prefix", "/".join(parts[5:])]
    for key, flag in (("auth", "--auth"), ("config_file", "--config-file"), ("profile", "--profile"),
                      ("security_token", "--security-token"), ("region", "--region")):
        _param(args, params, key, flag)
    return args


def _s3(uri: str, rest: str, params: Mapping[str, str]) -> list[str]:
    if not rest:
        raise OutputStorageError("invalid S3 storage URI format: missing bucket name")
    # The first "@" starts the region, wherever it is (documented).
    region = ""
    if "@" in rest:
        before, _, after = rest.partition("@")
        region, _, prefix = after.partition("/")
        bucket = before
    else:
        bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise OutputStorageError("invalid S3 storage URI format: bucket name cannot be empty")
    args = ["--upload-results", "--storage-provider", "aws", "--storage-bucket", bucket]
    if prefix:
        args += ["--storage-prefix", prefix]
    _param(args, params, "aws_access_key_id", "--storage-aws-access-key-id")
    _param(args, params, "aws_secret_access_key", "--storage-aws-secret-access-key")
    _param(args, params, "aws_profile", "--storage-aws-profile")
    if "aws_region" in params:
        args += ["--storage-aws-region", str(params["aws_region"])]
    elif region:
        args += ["--storage-aws-region", region]
    return args


def _azure(uri: str, rest: str, params: Mapping[str, str]) -> list[str]:
    if not rest:
        raise OutputStorageError("invalid Azure storage URI format: missing account name")
    parts = rest.split("/", 2)
    if len(parts) < 2:
        raise OutputStorageError("invalid Azure storage URI format: missing container name")
    account, container = parts[0].removesuffix(".blob.core.windows.net"), parts[1]
    if not account or not container:
        raise OutputStorageError(
            "invalid Azure storage URI format: account name and container name are required")
    args = ["--upload-results", "--storage-provider", "azure", "--storage-bucket", container]
    if len(parts) > 2 and parts[2]:
        args += ["--storage-prefix", parts[2]]
    args += ["--storage-azure-account-name", str(params.get("azure_account_name", account))]
    _param(args, params, "azure_account_key", "--storage-azure-account-key")
    _param(args, params, "azure_connection_string", "--storage-azure-connection-string")
    _param(args, params, "azure_sas_token", "--storage-azure-sas-token")
    return args


def _gcs(uri: str, rest: str, params: Mapping[str, str]) -> list[str]:
    if not rest:
        raise OutputStorageError("invalid GCS storage URI format: missing bucket name")
    bucket, _, path = rest.partition("/")
    if not bucket:
        raise OutputStorageError("invalid GCS storage URI format: bucket name cannot be empty")
    args = ["--upload-results", "--storage-provider", "gcp", "--storage-bucket", bucket]
    if path:
        args += ["--storage-prefix", path]
    _param(args, params, "gcp_project_id", "--storage-gcp-project-id")
    _param(args, params, "gcp_credentials_path", "--storage-gcp-credentials-path")
    return args


def _github(uri: str, rest: str, params: Mapping[str, str]) -> list[str]:
    if not rest:
        raise OutputStorageError("invalid GitHub storage URI format: missing owner/repository")
    repo, _, tag = rest.partition("@")
    if "/" not in repo:
        raise OutputStorageError("invalid GitHub storage URI format: expected owner/repository")
    owner, _, name = repo.partition("/")
    if not owner or not name:
        raise OutputStorageError("invalid GitHub storage URI format: owner and repository are required")
    args = ["--upload-results", "--storage-provider", "github", "--github-owner", owner,
            "--github-repo", name]
    if (tag or "latest") != "latest":
        args += ["--github-tag", tag]
    _param(args, params, "github_token", "--github-token")
    return args


_BUILDERS: Final = {"pvc": _pvc, "oci": _oci, "s3": _s3, "az": _azure, "gs": _gcs, "github": _github}

__all__ = ["OUTPUT_VOLUME", "ClaimOutput", "OutputStorageError", "claim_of", "storage_args"]
