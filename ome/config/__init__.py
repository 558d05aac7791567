"""Operator configuration read from ConfigMaps (the `inferenceservice-config` ConfigMap)."""
