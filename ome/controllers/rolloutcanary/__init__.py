"""Rollout runs and canaries: pinned plans, canary step machines, Prometheus analysis."""
