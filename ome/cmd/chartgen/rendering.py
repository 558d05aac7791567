"""A Python rendering of the ome-resources chart, for the unit tests: what `helm template` gives for the
constructs the generator writes, checked against the real `helm template` by tests/unit/charts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import yaml

from ome.cmd.chartgen.chart_files import charts
from ome.cmd.chartgen.chart_values import (
    ARG_VALUES,
    EXTRA_LISTS,
    OPTIONAL_ARGS,
    QUOTA_FLAG,
    bench_json,
    chart_entries,
    default_values,
)
from ome.cmd.chartgen.go_format import go_number
from ome.cmd.chartgen.manifests import Obj, parse
from ome.cmd.chartgen.templates import NS, Value, manager_template


def render_defaults(files: dict[str, str] | None = None, *, cert_manager: bool = False,
                    model_agent: bool = False, values: Obj | None = None) -> list[Obj]:
    """What `helm template` gives with the default values (and these two switches), for the constructs this
    generator writes. `values`: other values for the ConfigMap's entries, the quota flag and the flags
    rendered only when set (OPTIONAL_ARGS); the other manager values are rendered with their defaults."""
    files = files or charts()
    _, manager_values = manager_template()
    # As Helm merges user values over the chart's: a null removes the key.
    values = _without_nulls(values) if values is not None else default_values()
    values["webhook"]["certManager"]["enabled"] = cert_manager
    values["modelAgent"]["enabled"] = model_agent
    manager_values = [Value(v.sentinel, v.template, cert_manager)
                      if v.sentinel == "HELMVAL_CERT_READONLY" else v
                      for v in manager_values]
    rendered: list[Obj] = []
    for path, text in sorted(files.items()):
        if "/templates/" not in path:
            continue
        for value in [NS, *manager_values]:
            text = text.replace(value.template, _scalar(value))
        text = render_blocks(text, values)
        rendered += parse(text)
    return rendered


def _without_nulls(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_nulls(v) for k, v in node.items() if v is not None}
    if isinstance(node, list):
        return [_without_nulls(v) for v in node]
    return node


def _scalar(value: Value) -> str:
    if value.template.endswith("| quote }}"):
        return json.dumps(value.default)
    return str(value.default).lower() if isinstance(value.default, bool) else str(value.default)


def render_blocks(text: str, values: Obj) -> str:
    enabled = {".Values.webhook.certManager.enabled": values["webhook"]["certManager"]["enabled"],
               "not .Values.webhook.certManager.enabled": not values["webhook"]["certManager"]["enabled"],
               ".Values.modelAgent.enabled": values["modelAgent"]["enabled"]}
    out: list[str] = []
    stack: list[bool] = []
    lines: Iterator[str] = iter(text.splitlines())
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("{{- if "):
            stack.append(enabled[stripped[len("{{- if "):-len(" }}")]])
        elif stripped == "{{- else }}":
            stack[-1] = not stack[-1]
        elif stripped == "{{- end }}" and stack:
            stack.pop()
        elif stripped.startswith("{{- $entries := "):
            while not next(lines).strip().startswith("{{- range $key, $value := $entries"):
                pass
            next(lines)  # the key line
            next(lines)  # its end
            if all(stack):
                out += [f"  {k}: {json.dumps(v)}" for k, v in sorted(chart_entries(values).items())]
        elif stripped.startswith("{{- with .Values.ome.controller.quotaAcceleratorResources"):
            indent = line[: len(line) - len(line.lstrip())]
            quota = values["ome"]["controller"].get("quotaAcceleratorResources")
            next(lines)  # the flag line
            next(lines)  # its end
            if all(stack) and quota:
                out.append(f"{indent}- {json.dumps(QUOTA_FLAG + '=' + ','.join(quota))}")
        elif stripped in {f"{{{{- with .Values.{p} }}}}" for p in EXTRA_LISTS.values()}:
            path = stripped[len("{{- with .Values."):-len(" }}")]
            width = int(next(lines).split("nindent")[1].split()[0])  # '{{- toYaml . | nindent <n> }}'
            next(lines)  # its end
            items = _lookup(values, path)
            if all(stack) and items:
                dumped = yaml.safe_dump(items, sort_keys=False, width=1000).splitlines()
                out += [" " * width + item for item in dumped]
        elif stripped in {f"{{{{- with .Values.{ARG_VALUES[flag]} }}}}" for flag in OPTIONAL_ARGS}:
            indent = line[: len(line) - len(line.lstrip())]
            path = stripped[len("{{- with .Values."):-len(" }}")]
            flag = next(lines).strip().split('"')[1].partition("=")[0]  # '- {{ printf "<flag>=%v" . ...'
            next(lines)  # its end
            value = _lookup(values, path)
            if all(stack) and value:
                out.append(f"{indent}- {json.dumps(f'{flag}={go_number(value)}')}")
        elif all(stack):
            out.append(_render_bench(line, values))
    return "\n".join(out) + "\n"


def _lookup(values: Obj, path: str) -> Any:
    node: Any = values
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _render_bench(line: str, values: Obj) -> str:
    if ".Values.ome.benchmarkJob" not in line:
        return line
    key = line.split(":", 1)[0]
    return f"{key}: '{bench_json(values)}'"
