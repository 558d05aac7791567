"""The committed role must match what the controllers watch and write."""

from __future__ import annotations

import subprocess
import sys

import yaml

from ome.cmd import rbac


def test_committed_role_is_current() -> None:
    done = subprocess.run([sys.executable, "-m", "ome.cmd.rbac", "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


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
