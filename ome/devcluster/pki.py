"""Certificates and keys for the dev control plane, written into the cluster's state directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ome.framework import certs


@dataclass(frozen=True, slots=True)
class Pki:
    """Paths of every file the components need; all live under `<state>/pki`."""

    dir: Path

    @property
    def ca_crt(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.dir / "ca.key"

    @property
    def apiserver_crt(self) -> Path:
        return self.dir / "apiserver.crt"

    @property
    def apiserver_key(self) -> Path:
        return self.dir / "apiserver.key"

    @property
    def sa_key(self) -> Path:
        return self.dir / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.dir / "sa.pub"

    @property
    def admin_crt(self) -> Path:
        return self.dir / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.dir / "admin.key"


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o600)


def generate(directory: Path) -> Pki:
    """Creates the CA, the apiserver serving cert (IP SAN 127.0.0.1), the service-account key pair and an
    admin client cert in system:masters. Existing files are kept so a restarted cluster keeps its identity."""
    pki = Pki(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if pki.admin_key.exists():
        return pki
    ca_crt, ca_key = certs.generate_ca("ome-dev-ca")
    _write(pki.ca_crt, ca_crt)
    _write(pki.ca_key, ca_key)
    crt, key = certs.generate_serving_cert(
        ca_crt, ca_key, "kube-apiserver",
        dns_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                   "kubernetes.default.svc.cluster.local"),
        ip_addresses=("127.0.0.1", "10.96.0.1"),
    )
    _write(pki.apiserver_crt, crt)
    _write(pki.apiserver_key, key)
    sa_key, sa_pub = certs.generate_rsa_keypair()
    _write(pki.sa_key, sa_key)
    _write(pki.sa_pub, sa_pub)
    crt, key = certs.generate_client_cert(ca_crt, ca_key, "ome-dev-admin", organizations=("system:masters",))
    _write(pki.admin_crt, crt)
    _write(pki.admin_key, key)
    return pki


def client_cert(pki: Pki, user: str, groups: tuple[str, ...] = ()) -> tuple[bytes, bytes]:
    """A client certificate and key for `user` in `groups`, signed by the cluster CA."""
    return certs.generate_client_cert(
        pki.ca_crt.read_bytes(), pki.ca_key.read_bytes(), user, organizations=groups
    )
