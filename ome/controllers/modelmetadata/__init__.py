"""The metadata controller of pvc:// models: the metadata Job, its result, the model's status."""
