"""PEM files on disk, written the way a mounted kubernetes.io/tls Secret lays them out.

Apart from `ome.framework.certs` (which makes the material) so that writing a pair needs no X.509
library in the process: the manager only ever writes and loads PEM bytes.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_pem(path: str | os.PathLike[str], data: bytes, *, private: bool = False) -> Path:
    """Write atomically (temp file + rename), so a watcher never reads half a file; keys get mode 0600."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        os.fchmod(fd, 0o600 if private else 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_cert_pair(
    directory: str | os.PathLike[str],
    cert_pem: bytes,
    key_pem: bytes,
    *,
    cert_name: str = "tls.crt",
    key_name: str = "tls.key",
) -> tuple[Path, Path]:
    """Write a certificate and its key; the key first, so a watcher that reloads on the certificate's
    change finds the matching key."""
    key_path = write_pem(Path(directory) / key_name, key_pem, private=True)
    cert_path = write_pem(Path(directory) / cert_name, cert_pem)
    return cert_path, key_path
