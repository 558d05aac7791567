"""The revision hash leaves out the InferenceService annotations the replica names."""

from __future__ import annotations

from ome.omenative import revisions
from tests.unit.omenative import builders


def test_inherited_annotations_named_on_the_replica_stay_out_of_the_revision_hash() -> None:
    def replica(annotations: dict[str, str], excluded: str | None) -> dict[str, object]:
        runner = builders.runners()
        runner[0]["template"]["metadata"]["annotations"] = annotations
        meta = {"annotations": {revisions.EXCLUDED_KEYS_ANNOTATION: excluded}} if excluded else {}
        return {"metadata": meta, "spec": {"runners": runner}}

    def digest(obj: dict[str, object]) -> str:
        data = revisions.from_replica(obj)
        assert data is not None
        return revisions.revision_hash(data)

    plain = digest(replica({"team": "a"}, None))
    assert digest(replica({"team": "a", "ome.io/rollout-paused": "true"}, "ome.io/rollout-paused")) == plain
    assert digest(replica({"team": "a", "ome.io/rollout-paused": "true"}, None)) != plain
    assert digest(replica({"team": "b"}, "ome.io/rollout-paused")) != plain  # declared ones still count
    stored = revisions.from_replica(replica({"team": "a", "x": "1"}, "x"))
    assert (
        stored is not None
        and stored.to_json()["runners"][0]["template"]["metadata"]["annotations"]["x"] == "1"
    )
