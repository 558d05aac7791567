"""OMENative: the pure logic of the InferenceReplica controller (names, pods, revisions, Services,
Instance planning, status). Nothing here does I/O; `ome.controllers.inferencereplica` applies it."""
