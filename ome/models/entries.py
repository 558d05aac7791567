"""A model's entry in a node's status ConfigMap: what the agent on that node reports about it.

JSON under the model's `configmap_key`: `name`, `status` (Ready/Updating/Failed/Deleted), `config` (what the
model is, once its files were read), `progress` (how far a download has got) and, our addition, `message`:
why the model failed on the node, which the model's status then shows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Progress:
    phase: str
    """Scanning, Downloading or Finalizing."""
    total_bytes: int = 0
    completed_bytes: int = 0
    total_files: int = 0
    completed_files: int = 0
    speed_bytes_per_sec: float = 0.0
    last_updated: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase, "totalBytes": self.total_bytes, "completedBytes": self.completed_bytes,
                "totalFiles": self.total_files, "completedFiles": self.completed_files,
                "speedBytesPerSec": round(self.speed_bytes_per_sec, 1), "lastUpdated": self.last_updated}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Progress:
        return cls(str(data.get("phase") or ""), int(data.get("totalBytes") or 0),
                   int(data.get("completedBytes") or 0), int(data.get("totalFiles") or 0),
                   int(data.get("completedFiles") or 0), float(data.get("speedBytesPerSec") or 0.0),
                   str(data.get("lastUpdated") or ""))

    @property
    def percent(self) -> float:
        return 100.0 * self.completed_bytes / self.total_bytes if self.total_bytes else 0.0


@dataclass(frozen=True, slots=True)
class Entry:
    name: str
    status: str
    config: dict[str, Any] | None = None
    progress: Progress | None = None
    message: str = ""

    def dumps(self) -> str:
        out: dict[str, Any] = {"name": self.name, "status": self.status}
        if self.config:
            out["config"] = self.config
        if self.progress:
            out["progress"] = self.progress.to_json()
        if self.message:
            out["message"] = self.message
        return json.dumps(out, sort_keys=True, separators=(",", ":"))

    @classmethod
    def loads(cls, raw: str) -> Entry | None:
        """The entry, or None for a value that is not one (a hand edit must not break aggregation)."""
        try:
            data = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("status"), str):
            return None
        progress = data.get("progress")
        return cls(str(data.get("name") or ""), data["status"], data.get("config") or None,
                   Progress.from_json(progress) if isinstance(progress, dict) else None,
                   str(data.get("message") or ""))
