"""Hugging Face downloads: the repo's file list, resumable per-file downloads, checksums, publish.

Blocking code (huggingface_hub is synchronous); the agent runs it in a thread. Files download into the
staging directory with `hf_hub_download(local_dir=...)`, which resumes a partial file with a Range
request. Every file is then checked against the hub's metadata: its size, and its sha256 (LFS files) or
git blob id (small files). Only a fully verified copy is published at the model's path.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ome.modelagent import staging

CHUNK: Final = 8 * 1024 * 1024
HF_METADATA_DIR: Final = ".cache"
"""Where huggingface_hub keeps per-file download metadata inside a local_dir; dropped before publishing."""


class DownloadError(Exception):
    """The model could not be downloaded; the message is what the node reports."""


class ChecksumMismatch(DownloadError):
    pass


class Cancelled(Exception):
    """The model was deleted or changed while its files were downloading."""


@dataclass(frozen=True, slots=True)
class RemoteFile:
    name: str
    size: int
    sha256: str | None
    blob_id: str | None


@dataclass(frozen=True, slots=True)
class Plan:
    commit: str
    files: tuple[RemoteFile, ...]

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


FileDone = Callable[[RemoteFile], None]


def plan(repo_id: str, revision: str, *, endpoint: str, token: str | None) -> Plan:
    """The commit `revision` resolves to, and its files with sizes and checksums."""
    from huggingface_hub import HfApi  # noqa: PLC0415 - heavy import, only agents with hf:// models pay it
    from huggingface_hub import errors as hf_errors  # noqa: PLC0415

    try:
        api = HfApi(endpoint=endpoint, token=token)
        info = api.model_info(repo_id, revision=revision, files_metadata=True)
    except hf_errors.HfHubHTTPError as exc:
        raise DownloadError(f"hf://{repo_id}@{revision}: {_first_line(exc)}") from exc
    if not info.sha:
        raise DownloadError(f"hf://{repo_id}@{revision}: the hub reported no commit")
    files = tuple(
        RemoteFile(s.rfilename, int((s.lfs.size if s.lfs else s.size) or 0), s.lfs.sha256 if s.lfs else None,
                   s.blob_id)
        for s in info.siblings or ()
    )
    return Plan(info.sha, files)


def is_published(target: Path, p: Plan) -> bool:
    """A finished copy of this commit is already at `target` (files present with their sizes)."""
    marker = staging.read_marker(target)
    if not marker or marker.get("commit") != p.commit:
        return False
    return all((target / f.name).is_file() and (target / f.name).stat().st_size == f.size for f in p.files)


def download(repo_id: str, p: Plan, target: Path, *, endpoint: str, token: str | None,
             stop: threading.Event, on_file: FileDone) -> None:
    """Fetch every file into staging, verify, and publish at `target`."""
    from huggingface_hub import errors as hf_errors  # noqa: PLC0415
    from huggingface_hub import hf_hub_download  # noqa: PLC0415

    staged = staging.staging_dir(target)
    staged.mkdir(parents=True, exist_ok=True)
    for remote in p.files:
        if stop.is_set():
            raise Cancelled(repo_id)
        try:
            hf_hub_download(repo_id, remote.name, revision=p.commit, local_dir=staged, endpoint=endpoint,
                            token=token)
        except hf_errors.HfHubHTTPError as exc:
            raise DownloadError(f"hf://{repo_id}: {remote.name}: {_first_line(exc)}") from exc
        verify(staged / remote.name, remote)
        on_file(remote)
    staging.remove_tree(staged / HF_METADATA_DIR)
    staging.publish(staged, target, {"source": f"hf://{repo_id}", "commit": p.commit})


def verify(path: Path, remote: RemoteFile) -> None:
    """Size and checksum against the hub's metadata; a bad file is deleted so a retry fetches it again."""
    size = path.stat().st_size
    problem = None
    if remote.size and size != remote.size:
        problem = f"size {size} != {remote.size}"
    elif remote.sha256 and (got := file_sha256(path)) != remote.sha256:
        problem = f"sha256 {got} != {remote.sha256}"
    elif not remote.sha256 and remote.blob_id and (got := git_blob_id(path)) != remote.blob_id:
        problem = f"git blob id {got} != {remote.blob_id}"
    if problem:
        path.unlink(missing_ok=True)
        raise ChecksumMismatch(f"checksum mismatch for {remote.name}: {problem}")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def git_blob_id(path: Path) -> str:
    """Git's object id of a file: sha1 of `blob <size>\\0` and the content (the hub's `blobId`)."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode(), usedforsecurity=False)
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _first_line(exc: Any) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
