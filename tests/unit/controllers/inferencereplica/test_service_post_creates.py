"""A replica's Services are POSTed under the controller's field manager, and a changed Service has the
fields a POST left in an `Update` entry moved to the controller's `Apply` entry before an apply that could
drop one of them (framework/post_creates.py), so that the apply drops what the desired Service no longer
has. A Service this process POSTed whose apply drops nothing is applied without the move."""

from __future__ import annotations

from ome.api.resources import INFERENCE_REPLICAS, SERVICES
from ome.framework.post_creates import USER_AGENT_MANAGER
from tests.unit.controllers.inferencereplica.world import World
from tests.unit.omenative.builders import replica as replica_body

MANAGER = "ome-inferencereplica-controller"


async def test_services_are_created_under_the_field_manager() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body())
    await world.reconcile()
    names = [s["metadata"]["name"] for s in world.api.of(SERVICES)]
    assert names and all(world.api.created_by[n] == MANAGER for n in names)


async def test_a_changed_service_made_by_an_earlier_post_has_its_fields_moved_first() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body())
    await world.reconcile()
    world.restart()  # this process did not POST it: what its POST set is not known here
    svc = world.api.of(SERVICES)[0]
    name = svc["metadata"]["name"]
    # As an earlier version left it: POSTed without a field manager, so the user agent's name owns it.
    svc["metadata"]["managedFields"] = [{"manager": USER_AGENT_MANAGER, "operation": "Update", "apiVersion": "v1",
                                         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:ports": {}}}}]
    svc["spec"]["selector"] = {"edited": "by-hand"}  # drifted: the pass re-applies it
    world.api.writes.clear()
    await world.reconcile()
    mine = [w for w in world.api.writes if w[2] == name]
    assert mine == [("patch", "Service", name), ("apply", "Service", name)]
    entries = world.api.get(SERVICES, name)["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"]) for e in entries] == [(MANAGER, "Apply")]


async def test_a_changed_service_this_process_posted_is_applied_without_the_move() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body())
    await world.reconcile()
    svc = world.api.of(SERVICES)[0]
    name = svc["metadata"]["name"]
    # What its POST left (this fake records none): the controller's Update entry.
    svc["metadata"]["managedFields"] = [{"manager": MANAGER, "operation": "Update", "apiVersion": "v1",
                                         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:selector": {}}}}]
    svc["spec"]["selector"] = {"edited": "by-hand"}  # drifted: the pass re-applies it, a field the POST set
    world.api.writes.clear()
    await world.reconcile()
    mine = [w for w in world.api.writes if w[2] == name]
    assert mine == [("apply", "Service", name)]
    assert world.api.get(SERVICES, name)["spec"]["selector"] != {"edited": "by-hand"}
