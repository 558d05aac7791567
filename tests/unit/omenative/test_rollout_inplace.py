"""In-place updates: only regular containers' images may differ."""

from __future__ import annotations

import copy

from ome.omenative import rollout_inplace as inplace
from ome.omenative.revisions import from_spec
from tests.unit.omenative import builders


def test_image_only_change_is_possible_in_place() -> None:
    old, new = (
        from_spec({"runners": builders.runners()}),
        from_spec({"runners": builders.runners(image="img:2")}),
    )
    assert old is not None and new is not None
    assert inplace.in_place_possible(old, new)
    assert inplace.images(new) == {"ome-container": "img:2"}
    patch = inplace.image_patch(new, "abcd1234", "ome.io/revision-hash")
    assert patch["spec"]["containers"] == [{"name": "ome-container", "image": "img:2"}]
    assert patch["metadata"]["labels"] == {"ome.io/revision-hash": "abcd1234"}


def test_env_resources_init_images_and_labels_are_not_in_place() -> None:
    base = builders.runners()
    old = from_spec({"runners": base})
    assert old is not None
    for change in ("env", "init", "label", "resources"):
        runners = copy.deepcopy(base)
        spec = runners[0]["template"]["spec"]
        if change == "env":
            spec["containers"][0]["env"] = [{"name": "A", "value": "1"}]
        elif change == "init":
            spec["initContainers"] = [{"name": "fetch", "image": "busybox:2"}]
        elif change == "label":
            runners[0]["template"]["metadata"]["labels"]["new"] = "x"
        else:
            spec["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "2"}}
        new = from_spec({"runners": runners})
        assert new is not None and not inplace.in_place_possible(old, new), change


def test_multi_pod_instances_never_update_in_place() -> None:
    old = from_spec({"runners": builders.runners(workers=2)})
    new = from_spec({"runners": builders.runners(workers=2, image="img:2")})
    assert old is not None and new is not None
    assert inplace.image_only(old, new) and not inplace.in_place_possible(old, new)


def test_refusal_message() -> None:
    assert inplace.refused_message("engine", 0) == (
        "OMENative component=engine instance=0 rejected update: InPlaceOnly strategy but diff exceeds container "
        "images"
    )
