"""Rollout coordination: rollout groups of an InferenceService's OMENative components."""
