"""Where the dev cluster finds its binaries and keeps its state."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = _HERE / "build_control_plane.sh"
VERSIONS_FILE = _HERE / "versions.env"


@dataclass(frozen=True, slots=True)
class Versions:
    kube: str
    etcd: str
    kwok: str

    @property
    def cache_key(self) -> str:
        return f"kube-{self.kube}_etcd-{self.etcd}_kwok-{self.kwok}"


def read_versions(path: Path = VERSIONS_FILE) -> Versions:
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return Versions(values["KUBE_VERSION"], values["ETCD_VERSION"], values["KWOK_VERSION"])


def cache_root() -> Path:
    return Path(os.environ.get("OME_CACHE_DIR", Path.home() / ".cache" / "ome"))


def bin_dir(versions: Versions | None = None) -> Path:
    """The versioned binary cache; OME_K8S_BIN_DIR overrides it (for binaries built elsewhere)."""
    if override := os.environ.get("OME_K8S_BIN_DIR"):
        return Path(override)
    return cache_root() / "k8s" / (versions or read_versions()).cache_key / "bin"


def default_state_dir() -> Path:
    return Path(os.environ.get("OME_DEV_STATE_DIR", cache_root() / "devcluster"))


REQUIRED_BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def missing_binaries(directory: Path) -> list[str]:
    return [b for b in REQUIRED_BINARIES if not (directory / b).is_file()]


def ensure_binaries() -> Path:
    """Builds the control plane when any binary is missing (minutes the first time, then cached)."""
    directory = bin_dir()
    if not missing_binaries(directory):
        return directory
    print(f"control-plane binaries missing in {directory}; building them (first time takes minutes)",
          file=sys.stderr)
    subprocess.run(["bash", str(BUILD_SCRIPT)], check=True, stdout=sys.stderr)
    if missing := missing_binaries(directory):
        raise RuntimeError(f"build finished but {', '.join(missing)} missing in {directory}")
    return directory
