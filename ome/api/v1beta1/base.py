"""Shared building blocks of the ome.io/v1beta1 models.

Every API type derives from :class:`OMEModel`: python attributes are snake_case,
each carries its JSON name as ``alias``, unknown keys are kept (``extra="allow"``)
and :meth:`OMEModel.to_dict` dumps only what was set, so a dict survives a round
trip through a model unchanged.

Facts that only matter to the CRD generator (enums come from ``Literal`` types;
defaults, bounds, list types and CEL rules come from :func:`f`'s keyword
arguments) live in the field's ``json_schema_extra["crd"]``. Embedded
Kubernetes types are plain dicts in python and are marked with :class:`K8sRef`
so :mod:`ome.api.crdgen` can inline the apiserver's own schema for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

GROUP = "ome.io"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"


# --- markers read by the CRD generator --------------------------------------------------------


@dataclass(frozen=True)
class K8sRef:
    """The annotated dict is the Kubernetes type ``name`` (an OpenAPI v3 component name)."""

    name: str


@dataclass(frozen=True)
class Fmt:
    """OpenAPI ``format`` of a scalar (int32, int64, date-time, ...)."""

    format: str


@dataclass(frozen=True)
class IntOrStr:
    """intstr.IntOrString: an integer or a string such as ``"25%"``."""


@dataclass(frozen=True)
class QuantityMark:
    """resource.Quantity: ``1``, ``"500m"``, ``"30Gi"``."""


@dataclass(frozen=True)
class Preserve:
    """Arbitrary JSON kept verbatim (runtime.RawExtension)."""


@dataclass(frozen=True)
class Rule:
    """One ``x-kubernetes-validations`` CEL rule."""

    rule: str
    message: str


@dataclass(frozen=True)
class InlineK8s:
    """A Go struct that inlines a Kubernetes type (``json:",inline"``).

    The generator copies every property of ``name`` from the apiserver's schema, minus
    ``drop``; the inlined type's own ``required`` list is not copied.
    """

    name: str
    drop: tuple[str, ...] = ()


Int32 = Annotated[int, Fmt("int32")]
Int64 = Annotated[int, Fmt("int64")]
IntOrString = Annotated[int | str, IntOrStr()]
Quantity = Annotated[int | float | str, QuantityMark()]
Time = Annotated[str, Fmt("date-time")]
Duration = str  # metav1.Duration, e.g. "30m"; a plain string in the schema
URL = str  # knative apis.URL
UID = str
RawExtension = Annotated[Any, Preserve()]
StrMap = dict[str, str]

# Embedded Kubernetes types, kept as dicts; their schema comes from the apiserver.
PodSpecDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.core.v1.PodSpec")]
PodTemplateSpecDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.core.v1.PodTemplateSpec")]
ContainerDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.core.v1.Container")]
VolumeDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.core.v1.Volume")]
VolumeMountDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.core.v1.VolumeMount")]
EnvVarDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.core.v1.EnvVar")]
EnvFromSourceDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.core.v1.EnvFromSource")]
ResourceRequirementsDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.core.v1.ResourceRequirements")]
TolerationDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.core.v1.Toleration")]
AffinityDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.core.v1.Affinity")]
NodeAffinityDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.core.v1.NodeAffinity")]
LocalObjectReferenceDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.core.v1.LocalObjectReference")]
SecretKeySelectorDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.core.v1.SecretKeySelector")]
SecretReferenceDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.core.v1.SecretReference")]
DeploymentStrategyDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.apps.v1.DeploymentStrategy")]
MetricSpecDict = Annotated[dict[str, Any], K8sRef("io.k8s.api.autoscaling.v2.MetricSpec")]
HPABehaviorDict = Annotated[
    dict[str, Any], K8sRef("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerBehavior")
]
ObjectMetaDict = dict[str, Any]

ComponentType = Literal["engine", "decoder", "router"]


# --- models -----------------------------------------------------------------------------------


class OMEModel(BaseModel):
    """Base of every ome.io type: aliases are the JSON names, unknown keys survive."""

    model_config = ConfigDict(
        populate_by_name=True,
        extra="allow",
        protected_namespaces=(),
    )

    # Kubernetes types this Go struct inlines, and its type-level CEL rules.
    crd_inline: ClassVar[tuple[InlineK8s, ...]] = ()
    crd_rules: ClassVar[tuple[Rule, ...]] = ()
    crd_preserve_unknown: ClassVar[bool] = False

    def to_dict(self) -> dict[str, Any]:
        """The object as the apiserver would see it: JSON names, only the keys that were set."""
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return cls.model_validate(data)


def f(
    alias: str,
    default: Any = None,
    *,
    required: bool = False,
    **crd: Any,
) -> Any:
    """Declare a field: JSON name, optionality, and CRD-only facts.

    CRD keywords: minimum, maximum, pattern, min_length, max_length, min_items, max_items,
    max_properties, crd_default, list_type, list_map_keys, map_type, rules (tuple of Rule),
    nullable, items (schema merged into the array's items), inline (schema comes from an
    inlined Kubernetes type), preserve (keep unknown fields), format, enum.
    """
    extra: dict[str, Any] | None = {"crd": crd} if crd else None
    if required:
        return Field(alias=alias, json_schema_extra=extra)
    return Field(default, alias=alias, json_schema_extra=extra)


# --- CRD metadata for top-level kinds -----------------------------------------------------------


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    type: str
    json_path: str
    priority: int = 0


@dataclass(frozen=True)
class ScaleSubresource:
    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str | None = None


AGE = PrinterColumn("Age", "date", ".metadata.creationTimestamp")


@dataclass(frozen=True)
class CRDInfo:
    kind: str
    plural: str
    singular: str
    scope: Literal["Namespaced", "Cluster"] = "Namespaced"
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    printer_columns: tuple[PrinterColumn, ...] = ()
    status_subresource: bool = True
    scale: ScaleSubresource | None = None
    root_rules: tuple[Rule, ...] = ()
    required: tuple[str, ...] = ()
    preserve_status: bool = False

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{GROUP}"


class KubeObject(OMEModel):
    """A top-level ome.io object: apiVersion, kind, metadata, spec, status."""

    crd: ClassVar[CRDInfo]

    api_version: str = f("apiVersion", API_VERSION)
    kind: str | None = f("kind")
    metadata: ObjectMetaDict = Field(default_factory=dict, alias="metadata")

    @model_validator(mode="after")
    def _check_kind(self) -> Self:
        if self.kind is not None and self.kind != self.crd.kind:
            raise ValueError(f"kind {self.kind!r} does not match {self.crd.kind}")
        return self

    def to_dict(self) -> dict[str, Any]:
        body = super().to_dict()
        body.pop("apiVersion", None)
        body.pop("kind", None)
        return {"apiVersion": self.api_version, "kind": self.crd.kind, **body}

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str | None:
        ns = self.metadata.get("namespace")
        return str(ns) if ns is not None else None
