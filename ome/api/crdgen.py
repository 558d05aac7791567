"""Generate the ome.io CustomResourceDefinitions from the pydantic models.

    python -m ome.api.crdgen [--out config/crd] [--check] [--openapi FILE]

Writes ``ome.io_<plural>.yaml`` for every kind plus ``kustomization.yaml``. ``--check``
writes nothing and exits 1 when a file is missing or differs from what would be written.
Embedded Kubernetes types (PodSpec, Container, ...) are resolved from the apiserver's
OpenAPI v3 schemas in ``ome/api/openapi/k8s-openapi-v3.json`` (see hack/capture_openapi.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ome.api.k8s_openapi import DATA_FILE, K8sSchemas, Schema, finalize_defaults
from ome.api.schema import SchemaBuilder
from ome.api.v1beta1 import KINDS
from ome.api.v1beta1.base import GROUP, VERSION, CRDInfo, KubeObject

DEFAULT_OUT = Path("config/crd")
GENERATOR = "ome.api.crdgen"


def root_schema(builder: SchemaBuilder, cls: type[KubeObject]) -> Schema:
    info = cls.crd
    props: dict[str, Schema] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
    }
    fields = cls.model_fields
    for part in ("spec", "status"):
        if part in fields:
            props[part] = builder.field_schema(fields[part])
    if info.preserve_status and "status" in props:
        props["status"]["x-kubernetes-preserve-unknown-fields"] = True
    schema: Schema = {"type": "object", "properties": props}
    if info.required:
        schema["required"] = list(info.required)
    if info.root_rules:
        schema["x-kubernetes-validations"] = [{"rule": r.rule, "message": r.message} for r in info.root_rules]
    finalize_defaults(schema)
    return schema


def _printer_columns(info: CRDInfo) -> list[dict[str, Any]]:
    cols = []
    for col in info.printer_columns:
        entry: dict[str, Any] = {"name": col.name, "type": col.type, "jsonPath": col.json_path}
        if col.priority:
            entry["priority"] = col.priority
        cols.append(entry)
    return cols


def _subresources(info: CRDInfo) -> dict[str, Any]:
    sub: dict[str, Any] = {}
    if info.scale is not None:
        scale: dict[str, Any] = {
            "specReplicasPath": info.scale.spec_replicas_path,
            "statusReplicasPath": info.scale.status_replicas_path,
        }
        if info.scale.label_selector_path:
            scale["labelSelectorPath"] = info.scale.label_selector_path
        sub["scale"] = scale
    if info.status_subresource:
        sub["status"] = {}
    return sub


def build_crd(builder: SchemaBuilder, cls: type[KubeObject]) -> dict[str, Any]:
    info = cls.crd
    names: dict[str, Any] = {
        "kind": info.kind,
        "listKind": f"{info.kind}List",
        "plural": info.plural,
        "singular": info.singular,
    }
    if info.short_names:
        names["shortNames"] = list(info.short_names)
    if info.categories:
        names["categories"] = list(info.categories)
    version: dict[str, Any] = {"name": VERSION, "served": True, "storage": True}
    if info.printer_columns:
        version["additionalPrinterColumns"] = _printer_columns(info)
    version["schema"] = {"openAPIV3Schema": root_schema(builder, cls)}
    subresources = _subresources(info)
    if subresources:
        version["subresources"] = subresources
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": info.crd_name, "annotations": {"ome.io/generated-by": GENERATOR}},
        "spec": {
            "group": GROUP,
            "names": names,
            "scope": info.scope,
            "versions": [version],
        },
    }
    copied: dict[str, Any] = json.loads(json.dumps(crd))  # no sub-schema is shared
    return copied


def crd_filename(cls: type[KubeObject]) -> str:
    return f"{GROUP}_{cls.crd.plural}.yaml"


# libyaml's emitter when present: the same text as the pure-python one, several times faster.
_BASE_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BASE_DUMPER):  # type: ignore[misc]
    """Never writes YAML anchors: a repeated sub-schema is spelled out each time."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(doc: Any) -> str:
    body = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100_000)
    return "---\n" + str(body)


def render_all(k8s: K8sSchemas, kinds: Sequence[type[KubeObject]] = KINDS) -> dict[str, str]:
    """File name -> content for every CRD and the kustomization."""
    builder = SchemaBuilder(k8s)
    files = {crd_filename(cls): to_yaml(build_crd(builder, cls)) for cls in kinds}
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": sorted(files),
    }
    files["kustomization.yaml"] = yaml.safe_dump(kustomization, sort_keys=False)
    return files


def stale_files(out: Path, files: dict[str, str]) -> list[str]:
    stale = []
    for name, content in sorted(files.items()):
        path = out / name
        if not path.exists() or path.read_text() != content:
            stale.append(name)
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ome.api.crdgen", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="directory for the CRD files")
    parser.add_argument("--check", action="store_true", help="exit 1 if the files are stale")
    parser.add_argument("--openapi", type=Path, default=DATA_FILE, help="Kubernetes OpenAPI v3 data file")
    args = parser.parse_args(argv)

    if not args.openapi.exists():
        print(f"error: {args.openapi} is missing; run hack/capture_openapi.py", file=sys.stderr)
        return 2
    files = render_all(K8sSchemas.load(args.openapi))
    if args.check:
        stale = stale_files(args.out, files)
        for name in stale:
            print(f"stale: {args.out / name}", file=sys.stderr)
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (args.out / name).write_text(content)
    print(f"wrote {len(files)} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
