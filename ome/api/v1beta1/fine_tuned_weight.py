"""FineTunedWeight: cluster-scoped weights trained from a base model, such as a LoRA adapter."""

from __future__ import annotations

from ome.api.v1beta1.base import AGE, CRDInfo, KubeObject, PrinterColumn, RawExtension, f
from ome.api.v1beta1.base_model import ModelExtensionSpec, ModelStatusSpec, StorageSpec
from ome.api.v1beta1.common import ObjectReference


class FineTunedWeightSpec(ModelExtensionSpec):
    base_model_ref: ObjectReference = f("baseModelRef", required=True)
    model_type: str = f("modelType", required=True)
    hyper_parameters: RawExtension = f("hyperParameters", required=True)
    configuration: RawExtension | None = f("configuration")
    storage: StorageSpec = f("storage", required=True)
    training_job_ref: ObjectReference | None = f("trainingJobRef")


class FineTunedWeight(KubeObject):
    crd = CRDInfo(
        kind="FineTunedWeight",
        plural="finetunedweights",
        singular="finetunedweight",
        scope="Cluster",
        printer_columns=(
            PrinterColumn("Disabled", "boolean", ".spec.disabled"),
            PrinterColumn("Version", "string", ".spec.version"),
            PrinterColumn("Vendor", "string", ".spec.vendor"),
            PrinterColumn("CompartmentID", "string", ".spec.compartmentID"),
            PrinterColumn("ModelType", "string", ".spec.modelType"),
            PrinterColumn("Ready", "string", ".status.state"),
            AGE,
        ),
    )

    spec: FineTunedWeightSpec | None = f("spec")
    status: ModelStatusSpec | None = f("status")
