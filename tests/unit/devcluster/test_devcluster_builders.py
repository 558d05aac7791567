from __future__ import annotations

from pathlib import Path

import yaml

from ome.devcluster import components, kwok_stages, nodes, paths
from ome.devcluster.pki import Pki

PORTS = components.Ports(2379, 2380, 6443, 10257, 10259, 10247)


def test_versions_are_pinned_in_one_file() -> None:
    v = paths.read_versions()
    assert v.kube.startswith("v1.") and v.etcd.startswith("v3.") and v.kwok.startswith("v0.")
    assert paths.bin_dir(v).parts[-2] == v.cache_key


def test_every_component_listens_on_loopback_only() -> None:
    pki = Pki(Path("/s/pki"))
    kc = Path("/s/kubeconfig")
    bin_dir = Path("/b")
    comps = [
        components.etcd(bin_dir, Path("/s"), PORTS),
        components.kube_apiserver(bin_dir, Path("/s"), pki, PORTS),
        components.kube_controller_manager(bin_dir, kc, pki, PORTS),
        components.kube_scheduler(bin_dir, kc, PORTS),
        components.kwok(bin_dir, kc, Path("/s/kwok.yaml"), PORTS),
    ]
    for comp in comps:
        joined = " ".join(comp.argv)
        assert " 0.0.0.0" not in joined and "=0.0.0.0" not in joined, comp.name
        for arg in comp.argv:
            if "url" in arg or ("address" in arg and "advertise-address" not in arg) or "etcd-servers" in arg:
                assert "127.0.0.1" in arg, (comp.name, arg)
    kwok = comps[-1]
    assert "--node-ip=127.0.0.1" in kwok.argv
    assert "--manage-nodes-with-label-selector=type=kwok" in kwok.argv


def test_gpu_node_shape() -> None:
    node = nodes.gpu_node(1)
    labels = node["metadata"]["labels"]
    assert labels["type"] == "kwok"
    assert labels["nvidia.com/gpu.product"]
    assert labels["node.kubernetes.io/instance-type"]
    assert labels["topology.kubernetes.io/zone"] in nodes.ZONES
    for key in ("capacity", "allocatable"):
        assert node["status"][key]["nvidia.com/gpu"] == "8"
        assert {"cpu", "memory", "pods"} <= set(node["status"][key])
    assert not nodes.is_ready(node)
    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert nodes.is_ready(node)


def test_kwok_stages_cover_node_and_pod_lifecycle_and_leave_readiness_gates_to_ome() -> None:
    docs = list(yaml.safe_load_all(kwok_stages.kwok_config_yaml()))
    names = {d["metadata"]["name"] for d in docs}
    assert {"node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-complete", "pod-delete"} <= names
    assert all(d["kind"] == "Stage" for d in docs)
    ready = next(d for d in docs if d["metadata"]["name"] == "pod-ready")
    # kwok's stock stage marks every readiness gate True; OME's controller must own ome.io/serving.
    assert "readinessGates" in ready["spec"]["next"]["statusTemplate"]
    assert "range .spec.readinessGates" not in ready["spec"]["next"]["statusTemplate"]


def test_the_apiserver_audits_writes_only_when_given_a_policy() -> None:
    pki = Pki(Path("/s/pki"))
    plain = components.kube_apiserver(Path("/bin"), Path("/s"), pki, PORTS).argv
    assert not [a for a in plain if a.startswith("--audit")]
    audited = components.kube_apiserver(
        Path("/bin"), Path("/s"), pki, PORTS, audit_policy=Path("/s/audit-policy.yaml"),
        audit_log=Path("/s/logs/audit.log"),
    ).argv
    assert "--audit-policy-file=/s/audit-policy.yaml" in audited
    assert "--audit-log-path=/s/logs/audit.log" in audited and "--audit-log-format=json" in audited
    policy = yaml.safe_load(components.AUDIT_POLICY)
    assert policy["kind"] == "Policy" and policy["omitStages"] == ["RequestReceived"]
    reads, *_, writes = policy["rules"]
    assert reads == {"level": "None", "verbs": ["get", "list", "watch"]}, "reads are never audited"
    assert writes["level"] == "Metadata" and set(writes["verbs"]) >= {"create", "update", "patch", "delete"}


def test_pod_status_writes_of_anyone_but_the_admin_are_audited() -> None:
    """kwok, KCM and the scheduler (the admin user) write pod and node status all the time; a manager's
    serving-gate write must stay in the audit log, where the fault suite looks for foreign writes."""
    policy = yaml.safe_load(components.AUDIT_POLICY)
    [status_rule] = [r for r in policy["rules"]
                     if any("pods/status" in g.get("resources", []) for g in r.get("resources", []))]
    assert status_rule["level"] == "None" and status_rule["users"] == ["ome-dev-admin"]



def test_the_components_process_ids_come_from_the_state_file(tmp_path: Path) -> None:
    from ome.devcluster.cluster import Cluster, _save_state

    assert Cluster(tmp_path).pids() == {}  # no cluster there
    _save_state(tmp_path, {"components": [{"name": "etcd", "pid": 41}, {"name": "kube-apiserver", "pid": 42}]})
    assert Cluster(tmp_path).pids() == {"etcd": 41, "kube-apiserver": 42}
