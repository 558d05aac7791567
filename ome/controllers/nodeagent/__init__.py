"""Node agent label reconciler: turns the model agents' node labels into BaseModel/ClusterBaseModel status."""

from ome.controllers.nodeagent.setup import NODE_MODEL_LABELS, add_to_manager

__all__ = ["NODE_MODEL_LABELS", "add_to_manager"]
