"""Staging directories and the atomic swap that publishes a finished download.

A download never writes into the model's `path`: it fills `.<name>.download` next to it (a stable name,
so a restarted agent resumes where it stopped), is verified there, and only then is renamed into place.
A half-written model therefore never sits at `path`, and a reader of `path` sees the old copy or the new
one, never a mix. A marker file records which revision a finished copy holds.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Final

MARKER: Final = ".ome-model.json"


def staging_dir(target: Path) -> Path:
    return target.parent / f".{target.name}.download"


def read_marker(target: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((target / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def publish(staged: Path, target: Path, marker: dict[str, Any]) -> None:
    """Write the marker into `staged`, then make it `target` (replacing an old copy) by renames only."""
    (staged / MARKER).write_text(json.dumps(marker, sort_keys=True))
    target.parent.mkdir(parents=True, exist_ok=True)
    old = target.parent / f".{target.name}.old-{time.time_ns()}"
    if target.exists():
        os.replace(target, old)
    os.replace(staged, target)
    if old.exists():
        shutil.rmtree(old, ignore_errors=True)


def directory_bytes(root: Path) -> int:
    """Bytes under `root`, including partial files: the download's progress as the disk sees it."""
    total = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            try:
                total += os.stat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue  # renamed or removed while we looked
    return total


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
