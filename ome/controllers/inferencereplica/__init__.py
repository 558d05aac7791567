"""The InferenceReplica controller: Instances, their pods, Services, revisions and status."""

from ome.controllers.inferencereplica.setup import add_to_manager

__all__ = ["add_to_manager"]
