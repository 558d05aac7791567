"""Wiring of the node agent label reconciler: its informers, indexes and event mappers.

Nodes are watched metadata-only and cut down to their `models.ome.io/` labels, so a cluster of thousands
of nodes costs a few hundred bytes per node. A node or ConfigMap event wakes only the models whose label
or entry changed, found through indexes on the model informers (label key, ConfigMap key, claim).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from ome.api.resources import BASE_MODELS, CLUSTER_BASE_MODELS, CONFIGMAPS, NODES
from ome.controllers.nodeagent.reconciler import ModelStatusReconciler
from ome.framework import transforms
from ome.framework.cache import SharedCache
from ome.framework.controller import Controller
from ome.framework.manager import Manager
from ome.framework.reconcile import Request
from ome.models import labels

Obj = dict[str, Any]

NODE_MODEL_LABELS: Final = transforms.keep_label_prefixes(labels.DOMAIN + "/")
"""The Node transform; shared so that any other user of the metadata-only Node informer gets the same one."""
LABEL_KEY_INDEX: Final = "models.ome.io/label-key"
CONFIGMAP_KEY_INDEX: Final = "models.ome.io/configmap-key"
MODEL_RESOURCES: Final = (BASE_MODELS, CLUSTER_BASE_MODELS)


def _kind(obj: Obj) -> str:
    return labels.kind_of_namespace(obj["metadata"].get("namespace") or "")


def index_label_key(obj: Obj) -> list[str]:
    meta = obj["metadata"]
    return [labels.model_label_key(_kind(obj), meta["name"], meta.get("namespace"))]


def index_configmap_key(obj: Obj) -> list[str]:
    meta = obj["metadata"]
    return [labels.configmap_key(_kind(obj), meta["name"], meta.get("namespace"))]


def _models_by(cache: SharedCache, index: str, values: Iterable[str]) -> list[Request]:
    found = []
    for value in values:
        for res in MODEL_RESOURCES:
            for model in cache.list(res, index=(index, value)):
                found.append(Request(model["metadata"].get("namespace") or "", model["metadata"]["name"]))
    return found


def _changed(new: dict[str, str], old: dict[str, str] | None) -> set[str]:
    if old is None:
        return set(new)
    return {key for key in new.keys() | old.keys() if new.get(key) != old.get(key)}


def node_mapper(cache: SharedCache) -> Callable[[Obj], Iterable[Request]]:
    """Models whose label this node carries; enqueue_mapped also maps the old object, so removals count."""

    def mapper(node: Obj) -> Iterable[Request]:
        keys = [k for k in (node["metadata"].get("labels") or {}) if k.startswith(labels.DOMAIN + "/")]
        return _models_by(cache, LABEL_KEY_INDEX, keys)

    return mapper


def configmap_mapper(cache: SharedCache) -> Callable[[Obj], Iterable[Request]]:
    def mapper(cm: Obj) -> Iterable[Request]:
        return _models_by(cache, CONFIGMAP_KEY_INDEX, (cm.get("data") or {}).keys())

    return mapper


def _only_changes(fields: Callable[[Obj], Any]) -> Callable[[str, Obj, Obj | None], bool]:
    def predicate(event_type: str, obj: Obj, old: Obj | None) -> bool:
        return old is None or fields(obj) != fields(old)

    return predicate


def add_to_manager(manager: Manager, *, config_namespace: str = "ome") -> list[Controller]:
    """Register the model status controller; returns it (a list, to leave room for more)."""
    cache = manager.cache
    controller = Controller("nodeagent", ModelStatusReconciler(cache, manager.client,
                                                               config_namespace=config_namespace))
    for res in MODEL_RESOURCES:
        informer = cache.informer_for(res)
        informer.add_indexer(LABEL_KEY_INDEX, index_label_key)
        informer.add_indexer(CONFIGMAP_KEY_INDEX, index_configmap_key)
        controller.for_(informer)
    nodes = cache.informer_for(NODES, metadata_only=True, transform=NODE_MODEL_LABELS)
    controller.watches(nodes, node_mapper(cache),
                       _only_changes(lambda n: n["metadata"].get("labels")))
    status_cms = cache.informer_for(CONFIGMAPS, namespace=config_namespace,
                                    label_selector={labels.STATUS_CONFIGMAP_LABEL: "true"})
    controller.watches(status_cms, configmap_mapper(cache), _only_changes(lambda c: c.get("data")))
    manager.add_controller(controller)
    return [controller]


__all__ = ["NODE_MODEL_LABELS", "add_to_manager"]
