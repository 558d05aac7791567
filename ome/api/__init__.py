"""The ome.io API: pydantic models (``ome.api.v1beta1``) and the CRD generator (``ome.api.crdgen``)."""
