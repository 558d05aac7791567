"""The model agent (`ome-model-agent`): puts models' weights on its node and labels the node per model."""
