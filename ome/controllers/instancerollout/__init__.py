"""The Instance rollout controller: moves OMENative Instances onto a new revision (see reconciler)."""

from ome.controllers.instancerollout.setup import add_to_manager

__all__ = ["add_to_manager"]
