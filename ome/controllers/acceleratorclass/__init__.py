"""AcceleratorClass status: the nodes that match each class (status.nodes, availableNodes, lastUpdated)."""
