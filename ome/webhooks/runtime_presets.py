"""The `ome.io/engine` runtime annotation (labels-and-annotations.md, runtime annotations).

`ome.io/engine: sglang-pd` fills in an SGLang prefill-decode preset where the runtime leaves fields unset:
an engine runner in prefill mode with bootstrap port 8998 and a decoder runner in decode mode, both on
`lmsysorg/sglang:latest` serving on port 30000, and a router on `lmsysorg/sglang-router:latest` on port
30080. The runtime's own fields win (the preset is the base of a strategic merge, the runtime the patch).
Any other value is denied by the validating webhook.
"""

from __future__ import annotations

from typing import Any, Final

from ome.resolution.merge import MAIN_CONTAINER, strategic_merge
from ome.webhooks.loose import as_dict, dig

Obj = dict[str, Any]

ENGINE_ANNOTATION: Final = "ome.io/engine"
SGLANG_PD: Final = "sglang-pd"
PRESETS: Final = (SGLANG_PD,)
SGLANG_IMAGE: Final = "lmsysorg/sglang:latest"
ROUTER_IMAGE: Final = "lmsysorg/sglang-router:latest"
SERVING_PORT: Final = 30000
BOOTSTRAP_PORT: Final = 8998
ROUTER_PORT: Final = 30080


def _runner(image: str, port: int, args: list[str]) -> Obj:
    return {
        "runner": {
            "name": MAIN_CONTAINER,
            "image": image,
            "args": args,
            "ports": [{"containerPort": port, "name": "http1", "protocol": "TCP"}],
        }
    }


def sglang_pd_preset() -> Obj:
    """The spec fields the preset fills in (a fresh object each call)."""
    serve = [f"--port={SERVING_PORT}", "--host=0.0.0.0", "--model-path=$(MODEL_PATH)"]
    return {
        "engineConfig": _runner(
            SGLANG_IMAGE,
            SERVING_PORT,
            [*serve, "--disaggregation-mode=prefill", f"--disaggregation-bootstrap-port={BOOTSTRAP_PORT}"],
        ),
        "decoderConfig": _runner(SGLANG_IMAGE, SERVING_PORT, [*serve, "--disaggregation-mode=decode"]),
        "routerConfig": _runner(
            ROUTER_IMAGE, ROUTER_PORT, [f"--port={ROUTER_PORT}", "--host=0.0.0.0", "--pd-disaggregation"]
        ),
    }


def engine_preset(obj: Obj) -> str | None:
    value = dig(obj, "metadata", "annotations", ENGINE_ANNOTATION)
    return value if isinstance(value, str) else None


def preset_error(obj: Obj) -> str | None:
    value = engine_preset(obj)
    if value is None or value in PRESETS:
        return None
    return (
        f'annotation "{ENGINE_ANNOTATION}" value "{value}" is not supported: the only preset is "{SGLANG_PD}"'
    )


def apply_preset(obj: Obj) -> Obj:
    """The runtime with the preset under its own spec; unchanged without (or with an unknown) preset."""
    if engine_preset(obj) != SGLANG_PD:
        return obj
    obj["spec"] = strategic_merge(sglang_pd_preset(), as_dict(obj.get("spec")))
    return obj
