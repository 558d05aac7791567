"""`--accelerator-resources`: which OMENative components go through quota admission (controller-manager-
flags.md, labels-and-annotations.md `kueue.x-k8s.io/queue-name`). Pure, plus the process-wide setting.

The flag names the resources (comma-separated) that send a component through quota admission when its pods
request one. A component whose pods request none of them keeps no `kueue.x-k8s.io/queue-name` label on its
pods; without the flag every component keeps it (the chart passes `nvidia.com/gpu,google.com/tpu`).
Known only at startup, so `QUOTA` holds it for the projection, as the manager sets it from its flags.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

KUEUE_QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"


@dataclass(slots=True)
class QuotaResources:
    names: tuple[str, ...] | None = None
    """None: every component is governed (the flag is absent)."""


QUOTA: Final = QuotaResources()


def parse_resources(value: str) -> tuple[str, ...]:
    """The flag's value: names separated by commas (blanks dropped)."""
    return tuple(name.strip() for name in value.split(",") if name.strip())


def _requested(pod_spec: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for key in ("containers", "initContainers"):
        for container in pod_spec.get(key) or []:
            resources = (container or {}).get("resources") or {}
            for part in ("requests", "limits"):
                names.update((resources.get(part) or {}).keys())
    return names


def governed(pod_specs: Iterable[Mapping[str, Any]], names: tuple[str, ...] | None) -> bool:
    """Whether a component with these pod specs goes through quota admission."""
    if not names:
        return True
    wanted = set(names)
    return any(_requested(spec) & wanted for spec in pod_specs)


def pod_labels(labels: Mapping[str, str], is_governed: bool) -> dict[str, str]:
    """The pod template's labels: the queue label only on a governed component."""
    return dict(labels) if is_governed else {k: v for k, v in labels.items() if k != KUEUE_QUEUE_LABEL}


__all__ = ["KUEUE_QUEUE_LABEL", "QUOTA", "QuotaResources", "governed", "parse_resources", "pod_labels"]
