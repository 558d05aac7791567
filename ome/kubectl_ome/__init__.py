"""kubectl-ome: the `kubectl ome` plugin (instance list, status, runtime effective)."""
