"""The kueue queue label is not part of a component's revision (guides/operate-ome/accelerator-quota.md, v1.3):
"To move a workload to another team, change the label. On OMENative, running pods keep charging the old
team until the next rollout replaces them." A label change (or `--accelerator-resources` dropping it) must
not mint a revision, which would roll every Instance."""

from __future__ import annotations

from typing import Any

from ome.omenative import revisions
from ome.resolution.quota_governance import KUEUE_QUEUE_LABEL

Obj = dict[str, Any]


def spec(labels: dict[str, str], image: str = "img:1", workers: bool = True) -> Obj:
    def runner(name: str, size: int) -> Obj:
        return {"name": name, "size": size, "template": {
            "metadata": {"labels": dict(labels), "annotations": {"ome.io/declared": "1"}},
            "spec": {"containers": [{"name": "c", "image": image}]}}}
    runners = [runner("leader", 1), runner("worker", 1)] if workers else [runner("default", 1)]
    return {"runners": runners}


def digest(labels: dict[str, str], **kw: Any) -> str:
    data = revisions.from_spec(spec(labels, **kw))
    assert data is not None
    return revisions.revision_hash(data)


def test_the_label_is_the_one_the_controller_projects() -> None:
    assert revisions.QUEUE_LABEL == KUEUE_QUEUE_LABEL == "kueue.x-k8s.io/queue-name"


def test_moving_to_another_team_keeps_the_revision() -> None:
    alpha = digest({"app": "x", KUEUE_QUEUE_LABEL: "team-alpha"})
    assert digest({"app": "x", KUEUE_QUEUE_LABEL: "team-beta"}) == alpha
    assert digest({"app": "x"}) == alpha  # dropped by --accelerator-resources, or never set
    assert digest({"app": "x", KUEUE_QUEUE_LABEL: "team-beta"}, workers=False) == digest({"app": "x"}, workers=False)


def test_other_labels_and_the_pod_spec_still_make_a_new_revision() -> None:
    base = digest({"app": "x", KUEUE_QUEUE_LABEL: "team-alpha"})
    assert digest({"app": "y", KUEUE_QUEUE_LABEL: "team-alpha"}) != base
    assert digest({"app": "x", KUEUE_QUEUE_LABEL: "team-alpha"}, image="img:2") != base


def test_a_stored_revision_with_the_old_queue_is_ours_not_a_collision() -> None:
    """The ControllerRevision under the unchanged name keeps the old team's label: it is the same revision,
    so no collisionCount bump (which would roll the component too)."""
    old = revisions.from_spec(spec({"app": "x", KUEUE_QUEUE_LABEL: "team-alpha"}))
    new = revisions.from_spec(spec({"app": "x", KUEUE_QUEUE_LABEL: "team-beta"}))
    assert old is not None and new is not None
    replica = {"metadata": {"name": "chat-engine", "namespace": "ns", "uid": "u-1"},
               "spec": {"component": "engine", "parentRef": {"name": "chat"}}}
    stored = revisions.controller_revision(replica, old, 1)
    assert revisions.is_ours(stored, replica, new)
    other = revisions.from_spec(spec({"app": "y"}))
    assert other is not None and not revisions.is_ours(stored, replica, other)
