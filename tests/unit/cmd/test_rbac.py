"""The committed role must match what the controllers watch and write."""

from __future__ import annotations

import yaml

from ome.cmd import rbac


def _granted() -> dict[tuple[str, str], set[str]]:
    """Cluster-wide grants by (group, resource); rules limited to named objects are left out."""
    docs = [d for d in yaml.safe_load_all(rbac.ROLE_FILE.read_text()) if d]
    cluster_role = next(d for d in docs if d["kind"] == "ClusterRole")
    granted: dict[tuple[str, str], set[str]] = {}
    for rule in cluster_role["rules"]:
        if rule.get("resourceNames"):
            continue
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.setdefault((group, resource), set()).update(rule["verbs"])
    return granted


def test_the_committed_role_grants_every_declared_write_and_no_wildcard() -> None:
    """Properties of the committed file: what the controllers declare they write is granted, and the
    role stays least-privilege (no "*" anywhere, nothing beyond what is watched or declared)."""
    granted = _granted()
    for key, verbs in rbac.WRITES.items():
        assert set(verbs) <= granted.get(key, set()), key
    watched = {(i.resource.group, i.resource.plural) for i in rbac.manager_for_inspection().cache.informers}
    for key, verbs in granted.items():
        assert "*" not in verbs and "*" not in key, key
        assert key in watched or key in rbac.WRITES, f"{key} is granted but nothing watches or writes it"


def test_every_informer_has_list_and_watch() -> None:
    manager = rbac.manager_for_inspection()
    docs = [d for d in yaml.safe_load_all(rbac.ROLE_FILE.read_text()) if d]
    cluster_role = next(d for d in docs if d["kind"] == "ClusterRole")
    granted: dict[tuple[str, str], set[str]] = {}
    for rule in cluster_role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.setdefault((group, resource), set()).update(rule["verbs"])
    assert manager.cache.informers, "controllers registered no informers"
    for informer in manager.cache.informers:
        key = (informer.resource.group, informer.resource.plural)
        assert {"list", "watch"} <= granted.get(key, set()), key
