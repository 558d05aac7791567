"""`admin doctor` (pure): which APIs the cluster serves with the kind and scope OME expects, the
manager Deployment's image tag against the plugin's version, and which status features one
InferenceService carries. `Incomplete` is the best summary (no source says which OME version runs);
`Violations` when a required API is missing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ome.api import resources
from ome.kubectl_ome.table import format_table, shorten_end

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Api:
    group_version: str
    resource: str
    kind: str
    namespaced: bool
    required: bool


def _ome(res: resources.Resource, required: bool) -> Api:
    return Api("ome.io/v1beta1", res.plural, res.kind, res.namespaced, required)


APIS: Final = (
    Api("v1", "pods", "Pod", True, True),
    Api("v1", "events", "Event", True, True),
    Api("v1", "configmaps", "ConfigMap", True, True),
    Api("apps/v1", "deployments", "Deployment", True, True),
    Api("apps/v1", "controllerrevisions", "ControllerRevision", True, False),
    _ome(resources.INFERENCE_SERVICES, True),
    _ome(resources.BASE_MODELS, True),
    _ome(resources.SERVING_RUNTIMES, True),
    _ome(resources.CLUSTER_BASE_MODELS, True),
    _ome(resources.CLUSTER_SERVING_RUNTIMES, True),
    _ome(resources.INFERENCE_REPLICAS, False),
    _ome(resources.AUTOSCALER_POLICIES, False),
    _ome(resources.TRAFFIC_MAPS, False),
    _ome(resources.BENCHMARK_JOBS, False),
    _ome(resources.FINE_TUNED_WEIGHTS, False),
    _ome(resources.ACCELERATOR_CLASSES, False),
    _ome(resources.ACCELERATOR_QUOTAS, False),
    _ome(resources.WORKLOAD_CLUSTERS, False),
    Api("autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, False),
    Api("keda.sh/v1alpha1", "scaledobjects", "ScaledObject", True, False),
    Api("gateway.networking.k8s.io/v1", "httproutes", "HTTPRoute", True, False),
    Api("gateway.networking.k8s.io/v1", "gateways", "Gateway", True, False),
    Api("gateway.networking.k8s.io/v1", "gatewayclasses", "GatewayClass", False, False),
    Api("kueue.x-k8s.io/v1beta1", "workloads", "Workload", True, False),
    Api("kueue.x-k8s.io/v1beta1", "localqueues", "LocalQueue", True, False),
    Api("kueue.x-k8s.io/v1beta1", "clusterqueues", "ClusterQueue", False, False),
)
GROUP_VERSIONS: Final = tuple(dict.fromkeys(a.group_version for a in APIS))
FEATURES: Final = (
    "Autoscaling",
    "Canary",
    "Components",
    "Lifecycle",
    "MigrationHistory",
    "Placement",
    "Rollout",
    "RolloutCoordination",
    "RuntimePin",
    "ScaleTarget",
    "Traffic",
)
WIDTHS: Final = (24, 19, 29)
"""SUBJECT, EVIDENCE and DETAIL caps: the table fits 80 columns."""
_STABLE: Final = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")


@dataclass(frozen=True, slots=True)
class ApiResult:
    api: Api
    availability: str
    reason: str = ""


def _order(api: Api) -> tuple[bool, str, str]:
    # Named groups alphabetically, then the core group; resources alphabetically within a group.
    return (api.group_version == "v1", api.group_version, api.resource)


def classify(discovery: Mapping[str, Obj | str]) -> list[ApiResult]:
    """`discovery` maps each group version to its APIResourceList, or the reason its read failed
    (`NotFound` for a group version the cluster doesn't serve)."""
    out = []
    for api in sorted(APIS, key=_order):
        doc = discovery.get(api.group_version, "Unreadable")
        if isinstance(doc, str):
            availability = "NotDiscoverableAtVersion" if doc == "NotFound" else "Unavailable"
            out.append(ApiResult(api, availability, doc))
            continue
        listed = [
            r for r in doc.get("resources") or [] if isinstance(r, Mapping) and r.get("name") == api.resource
        ]
        if not listed:
            out.append(ApiResult(api, "NotDiscoverableAtVersion"))
        elif (
            len(listed) > 1
            or listed[0].get("kind") != api.kind
            or bool(listed[0].get("namespaced")) != api.namespaced
        ):
            out.append(ApiResult(api, "Unavailable", "MalformedPayload"))
        else:
            out.append(ApiResult(api, "Available"))
    return out


def cli_version(release: str | None, dirty: bool) -> str:
    """`vX.Y.Z` for a release build of the plugin, else `` (shown as Unknown)."""
    if release and not dirty and _STABLE.match(release) and not release.startswith("v"):
        return "v" + release
    if release and not dirty and _STABLE.match(release):
        return release
    return ""


def image_candidate(deployment: Mapping[str, Any] | None) -> tuple[str, str]:
    """(version, image state) of the `manager` container in the pod template."""
    if deployment is None:
        return "", "Unavailable"
    containers = (((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
        "containers"
    ) or []
    managers = [c for c in containers if isinstance(c, Mapping) and c.get("name") == "manager"]
    if not managers:
        return "", "NoManagerContainer"
    if len(managers) > 1:
        return "", "AmbiguousManagerContainer"
    image = str(managers[0].get("image") or "")
    if not image or image.endswith((":", "@")) or " " in image:
        return "", "Malformed"
    if "@" in image:
        return "", "DigestOnly"
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return "", "UnversionedImage"
    tag = last.rsplit(":", 1)[1]
    match = _STABLE.match(tag)
    if match is None:
        return "", "NonCanonicalTag"
    return "v" + ".".join(match.groups()), "SelectedStableTag"


def compare(cli: str, image: str) -> str:
    if not cli or not image:
        return "Unknown"
    a, b = _STABLE.match(cli), _STABLE.match(image)
    if a is None or b is None:
        return "Unknown"
    if a.group(1) != b.group(1):
        return "MajorMismatch"
    return "WithinOneMinor" if abs(int(a.group(2)) - int(b.group(2))) <= 1 else "OutsideOneMinor"


def features(isvc: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    if isvc is None:
        return [(f, "NotSelected") for f in FEATURES]
    status = isvc.get("status") or {}
    components = [c for c in (status.get("components") or {}).values() if isinstance(c, Mapping)]

    def any_component(key: str) -> bool:
        return any(c.get(key) for c in components)

    present = {
        "Autoscaling": any_component("autoscaler"),
        "Canary": bool(status.get("canary")),
        "Components": bool(components),
        "Lifecycle": any_component("lifecycle"),
        "MigrationHistory": bool(status.get("migrationHistory")),
        "Placement": bool(status.get("placement")),
        "Rollout": bool(status.get("rollout")),
        "RolloutCoordination": bool(status.get("rolloutCoordination")),
        "RuntimePin": bool(status.get("pinnedRevisionName") or status.get("lastRuntimeSyncToken")),
        "ScaleTarget": any_component("scaleTargetRef"),
        "Traffic": bool(status.get("traffic")),
    }
    return [(f, "Present" if present[f] else "AbsentOnSelectedObject") for f in FEATURES]


@dataclass(slots=True)
class Doctor:
    context: str
    namespace: str
    ome_namespace: str
    apis: list[ApiResult]
    manager: str
    """`Available`, or the reason the Deployment read failed."""
    isvc: str | None
    isvc_features: list[tuple[str, str]]
    cli: str
    image: tuple[str, str]

    @property
    def violations(self) -> int:
        return sum(1 for r in self.apis if r.api.required and r.availability == "NotDiscoverableAtVersion")

    @property
    def state(self) -> str:
        return "Violations" if self.violations else "Incomplete"

    @property
    def unavailable(self) -> int:
        apis = sum(1 for r in self.apis if r.availability != "Available")
        reads = (self.manager != "Available") + (self.isvc is None)
        feats = sum(1 for _, v in self.isvc_features if v != "Present")
        return apis + reads + feats + 1  # the operator compatibility is never verifiable


def rows(d: Doctor, wide: bool = False) -> list[tuple[str, str, str]]:
    out = [
        ("Doctor", d.state, "GET-only; not authorization"),
        ("Context", d.context or "-", "Current kubeconfig context"),
        ("Workload namespace", d.namespace, "Only selected named GET"),
        ("OME namespace", d.ome_namespace, "Named manager Deployment GET"),
    ]
    for r in d.apis:
        detail = ("Required" if r.api.required else "Optional") + (f" {r.reason}" if r.reason else "")
        if wide:
            scope = "Namespaced" if r.api.namespaced else "Cluster"
            detail += f" {r.api.group_version} {r.api.kind} {scope}"
        out.append((r.api.resource, r.availability, detail))
    deployment = f"{d.ome_namespace}/ome-controller-manager"
    out += [
        (
            "ManagerDeployment",
            "Available" if d.manager == "Available" else "Unavailable",
            deployment if d.manager == "Available" else f"{deployment} {d.manager}",
        ),
        (
            "SelectedInferenceService",
            "Available" if d.isvc else "NotRequested",
            f"{d.namespace}/{d.isvc or ''}",
        ),
        ("CLI version", d.cli or "Unknown", "CanonicalCandidate" if d.cli else "Unknown"),
        ("Manager image candidate", d.image[0], d.image[1]),
        ("Operator compatibility", "Unverifiable", "No canonical running version"),
        ("Image-tag comparison", compare(d.cli, d.image[0]), "Computed; not compatibility"),
    ]
    out += [(f, v, "Generation unverifiable") for f, v in d.isvc_features]
    return out


def table(cells: Sequence[tuple[str, str, str]], cut: bool = True) -> str:
    if not cut:
        return format_table(("SUBJECT", "EVIDENCE", "DETAIL"), cells)
    return format_table(
        ("SUBJECT", "EVIDENCE", "DETAIL"),
        [tuple(shorten_end(v, w) for v, w in zip(row, WIDTHS, strict=True)) for row in cells],
    )


def content(d: Doctor) -> Obj:
    def level(ok: bool) -> str:
        return "Observed" if ok else "Unavailable"

    return {
        "summary": {
            "state": d.state,
            "requiredAPIViolations": d.violations,
            "unavailableEvidence": d.unavailable,
        },
        "context": d.context,
        "workloadNamespace": d.namespace,
        "omeNamespace": d.ome_namespace,
        "apis": [
            {
                "groupVersion": r.api.group_version,
                "resource": r.api.resource,
                "kind": r.api.kind,
                "scope": "Namespaced" if r.api.namespaced else "Cluster",
                "required": r.api.required,
                "availability": r.availability,
                **({"reason": r.reason} if r.reason else {}),
                "evidence": level(r.availability == "Available"),
            }
            for r in d.apis
        ],
        "reads": [
            {
                "subject": "ManagerDeployment",
                "state": "Available" if d.manager == "Available" else "Unavailable",
                **({} if d.manager == "Available" else {"reason": d.manager}),
                "evidence": level(d.manager == "Available"),
            },
            {
                "subject": "SelectedInferenceService",
                "state": "Available" if d.isvc else "NotRequested",
                "evidence": level(d.isvc is not None),
            },
        ],
        "version": {
            "cli": d.cli,
            "managerImageCandidate": d.image[0],
            "imageState": d.image[1],
            "operatorCompatibility": "Unverifiable",
            "imageTagComparison": {"result": compare(d.cli, d.image[0]), "evidence": "Computed"},
        },
        "features": [
            {"feature": f, "state": v, "evidence": "Reported" if d.isvc else "Unavailable"}
            for f, v in d.isvc_features
        ],
    }


def warnings(d: Doctor) -> list[Obj]:
    out = [
        {"code": "SourceUnavailable", "source": r.api.resource}
        for r in d.apis
        if r.availability == "Unavailable"
    ]
    if d.manager != "Available":
        out.append({"code": "SourceUnavailable", "source": "ManagerDeployment"})
    return out
