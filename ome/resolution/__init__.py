"""Pure resolution of an InferenceService: model, runtime, components, deployment modes, desired objects.

Every function here takes plain dicts (the cached objects) and configuration and returns data; nothing
reads the cluster, so the whole path from spec to desired workloads is unit-tested without one.
"""
