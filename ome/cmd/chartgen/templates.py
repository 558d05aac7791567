"""The chart's templates, made from config/'s manifests: each is dumped as YAML with sentinel strings where a
value goes, then the sentinels are replaced by Go template text. `Value` pairs a sentinel with its template
text and what that renders to with the default values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import yaml

from ome.cmd.chartgen.chart_values import ARG_VALUES, EXTRA_LISTS, OPTIONAL_ARGS, QUOTA_FLAG, default_values
from ome.cmd.chartgen.manifests import NAMESPACE, Obj, load, manager_doc
from ome.controllers.benchmarkjob import builder as benchmark


@dataclass(frozen=True, slots=True)
class Value:
    """A sentinel, the template text that replaces it, and what it renders to with the default values."""

    sentinel: str
    template: str
    default: Any


NS: Final = Value("HELMVAL_NS", "{{ .Release.Namespace }}", NAMESPACE)


def _walk_namespaces(node: Any) -> Any:
    """Every `namespace: ome` becomes the release namespace."""
    if isinstance(node, dict):
        return {k: (NS.sentinel if k == "namespace" and v == NAMESPACE else _walk_namespaces(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_walk_namespaces(v) for v in node]
    return node


def _dump(docs: list[Obj]) -> str:
    return "---\n".join(yaml.safe_dump(d, sort_keys=False, width=1000) for d in docs)


def _indent_of(text: str, sentinel: str) -> str:
    line = next(line for line in text.splitlines() if sentinel in line)
    return line[: len(line) - len(line.lstrip())]


def _block(text: str, item_sentinel: str, condition: str, when_true: list[str], when_false: list[str]) -> str:
    """Replace the list item `- <sentinel>` by an if/else of YAML lines at the same indentation."""
    indent = _indent_of(text, item_sentinel)
    lines = [f"{indent}{{{{- if {condition} }}}}", *(indent + line for line in when_true)]
    if when_false:
        lines += [f"{indent}{{{{- else }}}}", *(indent + line for line in when_false)]
    lines.append(f"{indent}{{{{- end }}}}")
    return text.replace(f"{indent}- {item_sentinel}\n", "\n".join(lines) + "\n")


def _with_list(text: str, item_sentinel: str, path: str) -> str:
    """Replace the list item `- <sentinel>` by the items of the list value `path`, at the same indentation
    (toYaml writes a list's items as `- ` lines; nothing when the list is empty or null)."""
    indent = _indent_of(text, item_sentinel)
    return text.replace(f"{indent}- {item_sentinel}\n", (
        f"{indent}{{{{- with .Values.{path} }}}}\n"
        f"{indent}{{{{- toYaml . | nindent {len(indent)} }}}}\n"
        f"{indent}{{{{- end }}}}\n"))


def _list_item_lines(item: Any) -> list[str]:
    dumped = yaml.safe_dump([item], sort_keys=False, width=1000).splitlines()
    return dumped


def _v(path: str, *, quote: bool = True) -> str:
    return f"{{{{ .Values.{path}{' | quote' if quote else ''} }}}}"


def manager_template() -> tuple[str, list[Value]]:
    docs = [_walk_namespaces(d) for d in load("manager", "manager.yaml")]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    values: list[Value] = []
    spec = deployment["spec"]
    spec["replicas"] = "HELMVAL_REPLICAS"
    values.append(Value("HELMVAL_REPLICAS", _v("ome.controller.replicaCount", quote=False),
                        default_values()["ome"]["controller"]["replicaCount"]))
    pod = spec["template"]["spec"]
    container = pod["containers"][0]
    image = container["image"]
    container["image"] = "HELMVAL_IMAGE"
    values.append(Value("HELMVAL_IMAGE", '{{ printf "%s:%s" .Values.ome.controller.image '
                                          "(toString .Values.ome.controller.tag) | quote }}", image))
    new_args: list[str] = []
    optional: dict[str, str] = {}  # sentinel -> flag, rendered only when its value is set
    for n, arg in enumerate(container["args"]):
        flag, sep, raw = str(arg).partition("=")
        if sep and flag in OPTIONAL_ARGS:
            optional[f"HELMBLOCK_OPTIONAL{n}"] = flag
            new_args.append(f"HELMBLOCK_OPTIONAL{n}")
        elif sep and flag in ARG_VALUES:
            sentinel = f"HELMVAL_ARG{n}"
            new_args.append(sentinel)
            values.append(Value(sentinel, f'{{{{ printf "{flag}=%v" .Values.{ARG_VALUES[flag]} | quote }}}}',
                                str(arg)))
        else:
            new_args.append(arg)
    # The quota flag is a list value: rendered only when the list is not empty.
    new_args = ["HELMBLOCK_QUOTA" if str(a).startswith(QUOTA_FLAG + "=") else a for a in new_args]
    container["args"] = [*new_args, "HELMBLOCK_CERTARG"]
    container["env"] = [*container.get("env", []), "HELMBLOCK_EXTRAENV"]
    container["volumeMounts"] = [*container.get("volumeMounts", []), "HELMBLOCK_EXTRAVOLUMEMOUNTS"]
    for mount in container["volumeMounts"]:
        if isinstance(mount, dict) and mount["name"] == "cert":
            mount["readOnly"] = "HELMVAL_CERT_READONLY"
    values.append(Value("HELMVAL_CERT_READONLY", "{{ .Values.webhook.certManager.enabled }}", False))
    pod["volumes"] = [*("HELMBLOCK_CERTVOLUME" if v["name"] == "cert" else v for v in pod["volumes"]),
                      "HELMBLOCK_EXTRAVOLUMES"]
    volumes = manager_doc()["spec"]["template"]["spec"]["volumes"]
    cert_volume = next(v for v in volumes if v["name"] == "cert")
    text = _dump(docs)
    text = _block(text, "HELMBLOCK_CERTARG", "not .Values.webhook.certManager.enabled",
                  ["- --webhook-cert-bootstrap"], [])
    text = _block(text, "HELMBLOCK_CERTVOLUME", ".Values.webhook.certManager.enabled",
                  _list_item_lines(cert_volume), _list_item_lines({"name": "cert", "emptyDir": {}}))
    for sentinel, path in EXTRA_LISTS.items():
        text = _with_list(text, sentinel, path)
    indent = _indent_of(text, "HELMBLOCK_QUOTA")
    text = text.replace(f"{indent}- HELMBLOCK_QUOTA\n", (
        f"{indent}{{{{- with .Values.ome.controller.quotaAcceleratorResources }}}}\n"
        f'{indent}- {{{{ printf "{QUOTA_FLAG}=%s" (join "," .) | quote }}}}\n'
        f"{indent}{{{{- end }}}}\n"))
    for sentinel, flag in optional.items():
        text = text.replace(f"{indent}- {sentinel}\n", (
            f"{indent}{{{{- with .Values.{ARG_VALUES[flag]} }}}}\n"
            f'{indent}- {{{{ printf "{flag}=%v" . | quote }}}}\n'
            f"{indent}{{{{- end }}}}\n"))
    return text, values


def webhook_template() -> str:
    sources = load("webhook", "service.yaml") + load("webhook", "manifests.yaml")
    docs = [_walk_namespaces(d) for d in sources]
    for doc in docs:
        if doc["kind"].endswith("WebhookConfiguration"):
            doc["metadata"]["annotations"] = "HELMVAL_INJECT"
    text = _dump(docs)
    return text.replace("  annotations: HELMVAL_INJECT\n", (
        "  {{- if .Values.webhook.certManager.enabled }}\n"
        "  annotations:\n"
        "    cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/serving-cert\n"
        "  {{- end }}\n"))


def certificate_template() -> str:
    docs = [_walk_namespaces(d) for d in load("certmanager", "certificate.yaml")]
    text = _dump(docs).replace(f".{NAMESPACE}.svc", ".HELMVAL_NS.svc")
    return "{{- if .Values.webhook.certManager.enabled }}\n" + text + "{{- end }}\n"


def configmap_template() -> str:
    doc = _walk_namespaces(next(d for d in load("configmap", "inferenceservice-config.yaml")))
    doc["data"] = "HELMVAL_CONFIG"
    text = _dump([doc])
    return text.replace("data: HELMVAL_CONFIG\n", "data:\n" + _ENTRIES_TEMPLATE)


# The data of inferenceservice-config; chart_values.chart_entries is the same logic in Python.
_ENTRIES_TEMPLATE: Final = """\
  {{- $entries := deepCopy (.Values.ome.inferenceserviceConfig | default dict) }}
  {{- with .Values.ome.controller.lifecycle }}
  {{- $_ := set $entries "lifecycle" (toJson .) }}
  {{- end }}
  {{- with .Values.ome.controller.rollout }}
  {{- $_ := set $entries "rollout" (toJson .) }}
  {{- end }}
  {{- with .Values.ome.controller.coordination }}
  {{- $_ := set $entries "coordination" (toJson .) }}
  {{- end }}
  {{- with .Values.ome.controller.eventRecorder }}
  {{- $_ := set $entries "eventRecorder" (toJson .) }}
  {{- end }}
  {{- with .Values.ome.controller.podDisruptionBudget }}
  {{- $_ := set $entries "podDisruptionBudget" (toJson .) }}
  {{- end }}
  {{- with .Values.ome.omeAgent }}
  {{- $image := printf "%s:%s" .image (.tag | default "" | toString) }}
  {{- $job := deepCopy (.metadataJob | default dict) }}
  {{- $_ := set $job "image" $image }}
  {{- $_ := set $entries "omeAgent" (toJson $job) }}
  {{- $agent := . }}
  {{- $oci := dict }}
  {{- range $key := list "authType" "compartmentId" "region" }}
  {{- $_ := set $oci $key (index $agent $key | default "" | toString) }}
  {{- end }}
  {{- $init := dict "image" $image "vaultId" (.vaultId | default "" | toString) }}
  {{- $resources := .modelInit | default dict }}
  {{- range $key := list "memoryRequest" "memoryLimit" "cpuRequest" "cpuLimit" }}
  {{- with index $resources $key }}
  {{- $_ := set $init $key (toString .) }}
  {{- end }}
  {{- end }}
  {{- $_ := set $entries "modelInit" (toJson (merge $init $oci)) }}
  {{- $sidecar := dict "image" $image "memoryRequest" "2Gi" "memoryLimit" "4Gi" }}
  {{- $_ := set $sidecar "cpuRequest" "1" }}
  {{- $_ := set $sidecar "cpuLimit" "2" }}
  {{- $_ := set $entries "servingSidecar" (toJson (merge $sidecar $oci)) }}
  {{- end }}
  {{- range $key, $value := $entries }}
  {{ $key }}: {{ $value | toString | quote }}
  {{- end }}
"""


def benchmark_template() -> str:
    doc: Obj = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": benchmark.CONFIGMAP, "namespace": NS.sentinel},
                "data": {benchmark.CONFIGMAP_KEY: "HELMVAL_BENCH"}}
    pod = ('{"podConfig": {"image": {{ printf "%s:%s" .Values.ome.benchmarkJob.image '
           "(toString .Values.ome.benchmarkJob.tag) | toJson }}, "
           '"cpuRequest": {{ .Values.ome.benchmarkJob.cpuRequest | toString | toJson }}, '
           '"memoryRequest": {{ .Values.ome.benchmarkJob.memoryRequest | toString | toJson }}, '
           '"cpuLimit": {{ .Values.ome.benchmarkJob.cpuLimit | toString | toJson }}, '
           '"memoryLimit": {{ .Values.ome.benchmarkJob.memoryLimit | toString | toJson }}}}')
    return _dump([doc]).replace("HELMVAL_BENCH", "'" + pod + "'")


def plain(*parts: str) -> str:
    return _dump([_walk_namespaces(d) for d in load(*parts)])


def guarded(condition: str, text: str) -> str:
    return f"{{{{- if {condition} }}}}\n{text}{{{{- end }}}}\n"
