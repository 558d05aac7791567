"""RolloutPolicy status (alpha; only when the RolloutPolicy CRD is served at startup)."""
