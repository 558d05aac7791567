"""The InferenceService controller: InferenceService -> component workloads, Services, status."""
