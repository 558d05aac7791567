"""In-place updates (pure): whether two revisions differ only in regular containers' images.

Only then can a single-pod Instance keep its pod (name, node, emptyDir volumes): the images are patched
into the running pod. Anything else, an env var, a resource request, an init container's image, a label,
needs new pods; `InPlaceOnly` refuses such a change with the InPlaceUpdateNotPossible warning.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from ome.omenative.revisions import RevisionData

Obj = dict[str, Any]
TRANSITION_ANNOTATION: Final = "internal.ome.io/in-place-image-transition"


def _without_images(template: Obj) -> Obj:
    stripped = copy.deepcopy(template)
    for container in (stripped.get("spec") or {}).get("containers") or []:
        container.pop("image", None)
    return stripped


def image_only(old: RevisionData, new: RevisionData) -> bool:
    """Same runners and pairing protocol, templates equal but for regular containers' images."""
    if old.pairing_protocol != new.pairing_protocol or len(old.runners) != len(new.runners):
        return False
    for a, b in zip(old.runners, new.runners, strict=True):
        if (a.name, a.size) != (b.name, b.size):
            return False
        if _without_images(a.template) != _without_images(b.template):
            return False
    return True


def in_place_possible(old: RevisionData, new: RevisionData) -> bool:
    """A single-pod Instance with an image-only change; a multi-pod Instance always moves whole."""
    return not old.multi_pod and not new.multi_pod and image_only(old, new)


def images(data: RevisionData) -> dict[str, str]:
    """Container name -> image of a single-pod revision's pod."""
    runner = data.runners[0]
    return {
        str(c.get("name")): str(c.get("image"))
        for c in (runner.template.get("spec") or {}).get("containers") or []
    }


def image_patch(data: RevisionData, revision_hash: str, hash_label: str) -> Obj:
    """A strategic-merge patch setting the revision's images (by container name) and its hash label."""
    wanted = images(data)
    return {
        "metadata": {
            "labels": {hash_label: revision_hash},
            "annotations": {TRANSITION_ANNOTATION: revision_hash},
        },
        "spec": {"containers": [{"name": n, "image": i} for n, i in sorted(wanted.items())]},
    }


def refused_message(component: str, index: int) -> str:
    return (
        f"OMENative component={component} instance={index} rejected update: InPlaceOnly strategy but diff "
        "exceeds container images"
    )
