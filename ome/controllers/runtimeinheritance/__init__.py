"""The runtime inheritance status controller: `status.inheritanceChain` and `InheritanceReady`."""
