"""The v1.3 chart values a migrating user sets, rendered by the real `helm template` and read back by the
manager: each flows into `inferenceservice-config` or the manager's flags as v1.3's chart writes it, and the
manager acts on what it renders.

- `ome.controller.lifecycle.*` (set-instance-readiness-deadlines.md: "Set the cluster values under
  `ome.controller.lifecycle`"; configure-pod-batching.md: "All three settings live under
  `ome.controller.lifecycle`"; "To turn a setting off, set it to `null`");
- `ome.controller.quotaAcceleratorResources` (controller-manager-flags.md: `--accelerator-resources`, Helm
  value `ome.controller.quotaAcceleratorResources` (`nvidia.com/gpu`, `google.com/tpu`); an empty list: no
  flag, every component governed);
- `ome.controller.rollout.defaultReadyTimeout` (canary-progression.md §readyTimeout, 15m with the chart);
- `ome.omeAgent.*` (serve-models-from-pvc.md: "The metadata Job's settings are values of the `ome-resources`
  chart, under `ome.omeAgent.metadataJob`"; install.md: the ome-agent image, `ome.omeAgent.image` and
  `ome.omeAgent.tag`, runs the "optional `model-init` and `serving-sidecar` containers, and metadata Jobs";
  v1.3's chart fills the `modelInit` and `servingSidecar` entries from `ome.omeAgent`'s OCI settings);
- `ome.controller.podDisruptionBudget` (configure-pod-disruption-budgets.md: "Since v1.3, the ome-resources
  chart sets the RawDeployment and OMENative defaults to maxUnavailable: 1"; "A mode that you leave out keeps
  the chart's maxUnavailable: 1. To turn a mode's default off, set the mode to null"; Helm merges values, so
  a mode given only minAvailable keeps maxUnavailable: 1 unless `maxUnavailable: null`).

helm is the one built into the control plane's bin directory (ome/devcluster/build_control_plane.sh); the
generator's Python rendering (`chartgen.rendering.render_defaults`) is checked against it for the same values.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ome.cmd import manager, wiring
from ome.cmd.chartgen.chart_files import CHARTS
from ome.cmd.chartgen.chart_values import default_values
from ome.cmd.chartgen.manifests import object_key
from ome.cmd.chartgen.rendering import render_defaults
from ome.config import inferenceservice_config as cfg
from ome.config import pdb_config
from ome.controllers.modelmetadata import job as metadata_job
from ome.devcluster.operator_config import CHART_PDB, chart_pdb_entry
from ome.devcluster.paths import bin_dir
from ome.resolution import quota_governance
from ome.webhooks import pod_mutation
from ome.webhooks.handler import AdmissionRequest

Obj = dict[str, Any]
CHART = CHARTS / "ome-resources"
DEPLOYMENT = ("Deployment", "ome", "ome-controller-manager")
CONFIGMAP = ("ConfigMap", "ome", "inferenceservice-config")
HELM_HOME = {"HELM_CACHE_HOME": "/tmp/ome-helm/cache", "HELM_CONFIG_HOME": "/tmp/ome-helm/config",
             "HELM_DATA_HOME": "/tmp/ome-helm/data"}


def helm_template(tmp_path: Path, values: Obj | None = None, *sets: str) -> dict[tuple[str, str, str], Obj]:
    helm = bin_dir() / "helm"
    assert helm.is_file(), f"{helm} missing: run ome/devcluster/build_control_plane.sh (builds helm)"
    argv = [str(helm), "template", "ome", str(CHART), "-n", "ome",
            "--show-only", "templates/inferenceservice-config.yaml", "--show-only", "templates/manager.yaml"]
    if values is not None:
        path = tmp_path / "values.yaml"
        path.write_text(yaml.safe_dump(values))
        argv += ["-f", str(path)]
    done = subprocess.run([*argv, *sets], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **HELM_HOME})
    assert done.returncode == 0, done.stderr
    return {object_key(d): d for d in yaml.safe_load_all(done.stdout) if d}


def data(rendered: dict[tuple[str, str, str], Obj]) -> dict[str, str]:
    out: dict[str, str] = rendered[CONFIGMAP]["data"]
    return out


def args(rendered: dict[tuple[str, str, str], Obj]) -> list[str]:
    out: list[str] = rendered[DEPLOYMENT]["spec"]["template"]["spec"]["containers"][0]["args"]
    return out


def python_rendered(values: Obj) -> dict[tuple[str, str, str], Obj]:
    return {object_key(d): d for d in render_defaults(values=values)}


def test_lifecycle_values_reach_the_config_and_the_manager(tmp_path: Path) -> None:
    rendered = helm_template(tmp_path, None,
                             "--set", "ome.controller.lifecycle.scaleUpPodBatchSize=37",
                             "--set", "ome.controller.lifecycle.stuckPodGracePeriod=2m",
                             "--set", "ome.controller.lifecycle.unschedulableGracePeriod=null",
                             "--set", "ome.controller.lifecycle.gangScheduleTimeout.max=300s")
    lifecycle = json.loads(data(rendered)["lifecycle"])
    assert lifecycle["scaleUpPodBatchSize"] == 37
    assert lifecycle["scaleDownPodBatchSize"] == 100  # the other chart defaults stay
    assert lifecycle["stuckPodGracePeriod"] == "2m"
    assert "unschedulableGracePeriod" not in lifecycle  # turned off with null
    assert lifecycle["gangScheduleTimeout"] == {"min": "60s", "max": "300s"}
    config = cfg.parse(data(rendered))
    settings = wiring.Settings(config, lws_served=False, config_namespace="ome")
    assert settings.replica_settings().scale_up_pod_batch_size == 37
    assert settings.replica_settings().scale_down_requeue_interval == 5.0
    assert settings.replica_settings().gang_schedule_timeout == (60.0, 300.0)
    rollout = settings.rollout_settings()
    assert rollout.stuck_grace == 120.0 and rollout.unschedulable_grace is None
    assert config.lifecycle.not_acted_on() == []


def test_lifecycle_chart_defaults_are_the_documented_ones(tmp_path: Path) -> None:
    config = cfg.parse(data(helm_template(tmp_path)))
    life = config.lifecycle
    settings = wiring.Settings(config, lws_served=False, config_namespace="ome")
    replica, rollout = settings.replica_settings(), settings.rollout_settings()
    assert (replica.scale_up_pod_batch_size, replica.scale_down_pod_batch_size) == (100, 100)
    assert replica.scale_down_requeue_interval == 5.0 and replica.gang_schedule_timeout == (60.0, 600.0)
    assert rollout.unschedulable_grace == 900.0 and rollout.stuck_grace == 60.0
    assert replica.instance_ready_timeout == 1800.0 and replica.revision_history_limit == 10
    # omenative-update-strategies.md: 3 attempts, the second 1 minute after the first failure, the third 2
    # minutes after the second.
    assert life.update_retry is not None and life.update_retry.max_attempts == 3
    assert (replica.retry_initial_delay, replica.retry_multiplier) == (60.0, 2.0)
    assert life.migration_caps() == (10, 3600.0, 3) and life.auto_migrate_attempts() == 3


def test_a_lifecycle_json_string_still_works_when_the_structured_value_is_null(tmp_path: Path) -> None:
    """The pre-v1.3 way: the whole entry as a JSON string under ome.inferenceserviceConfig."""
    rendered = helm_template(tmp_path, {"ome": {"controller": {"lifecycle": None}, "inferenceserviceConfig": {
        "lifecycle": '{"instanceReadyTimeout": "10m"}'}}})
    assert data(rendered)["lifecycle"] == '{"instanceReadyTimeout": "10m"}'
    assert cfg.parse(data(rendered)).lifecycle.instance_ready_timeout == "10m"
    # Both given: the structured value wins, and the entry is written once.
    both = helm_template(tmp_path, {"ome": {"inferenceserviceConfig": {"lifecycle": '{"x": 1}'}}})
    assert json.loads(data(both)["lifecycle"])["scaleUpPodBatchSize"] == 100


def test_quota_accelerator_resources_become_the_manager_flag(tmp_path: Path) -> None:
    default = [a for a in args(helm_template(tmp_path)) if a.startswith("--accelerator-resources")]
    assert default == ["--accelerator-resources=nvidia.com/gpu,google.com/tpu"]
    custom = args(helm_template(tmp_path, None, "--set-json",
                                'ome.controller.quotaAcceleratorResources=["amd.com/gpu"]'))
    assert "--accelerator-resources=amd.com/gpu" in custom
    names = manager.parse_args([a for a in custom if a.startswith("--accelerator-resources")]).accelerator_resources
    assert names == ("amd.com/gpu",)
    nvidia_pod = {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
    assert quota_governance.governed([nvidia_pod], names) is False  # the manager no longer queues it
    empty = args(helm_template(tmp_path, None, "--set-json", "ome.controller.quotaAcceleratorResources=[]"))
    assert not [a for a in empty if a.startswith("--accelerator-resources")]  # every component governed
    assert manager.parse_args([]).accelerator_resources is None


def test_rollout_default_ready_timeout(tmp_path: Path) -> None:
    default = data(helm_template(tmp_path))
    assert json.loads(default["rollout"]) == {"defaultReadyTimeout": "15m"}
    assert cfg.parse(default).rollout.ready_timeout_seconds == 900.0
    custom = data(helm_template(tmp_path, None, "--set", "ome.controller.rollout.defaultReadyTimeout=20m"))
    assert cfg.parse(custom).rollout.ready_timeout_seconds == 1200.0
    none = data(helm_template(tmp_path, None, "--set", "ome.controller.rollout=null"))
    assert "rollout" not in none and cfg.parse(none).rollout.ready_timeout_seconds is None


def _budgets(tmp_path: Path, value: Any) -> dict[str, str]:
    return data(helm_template(tmp_path, {"ome": {"controller": {"podDisruptionBudget": value}}}))


def test_the_chart_defaults_both_modes_to_max_unavailable_1(tmp_path: Path) -> None:
    entry = data(helm_template(tmp_path))["podDisruptionBudget"]
    assert entry == '{"omeNative":{"maxUnavailable":1},"rawDeployment":{"maxUnavailable":1}}'
    assert cfg.parse({"podDisruptionBudget": entry}).pod_disruption_budget == CHART_PDB
    assert chart_pdb_entry() == {"podDisruptionBudget": entry}  # what the benches and the chaos harness install


def test_budget_values_render_as_the_docs_say(tmp_path: Path) -> None:
    # The Helm tab's values: RawDeployment 25%, OMENative keeps the chart's default. The entry is the JSON the
    # kubectl tab writes and the final check prints.
    kept = _budgets(tmp_path, {"rawDeployment": {"maxUnavailable": "25%"}})
    assert kept["podDisruptionBudget"] == '{"omeNative":{"maxUnavailable":1},"rawDeployment":{"maxUnavailable":"25%"}}'
    # `omeNative: null` turns that mode's default off: left out of the entry, so it has none.
    off = _budgets(tmp_path, {"rawDeployment": {"maxUnavailable": "25%"}, "omeNative": None})
    assert off["podDisruptionBudget"] == '{"rawDeployment":{"maxUnavailable":"25%"}}'
    budgets = cfg.parse(off).pod_disruption_budget
    assert budgets.for_mode("RawDeployment") == pdb_config.PDBPolicy(maxUnavailable="25%")
    assert budgets.for_mode("OMENative") is None
    # Only minAvailable: Helm keeps the chart's maxUnavailable beside it, and the manager refuses the entry.
    both = _budgets(tmp_path, {"rawDeployment": {"minAvailable": "50%"}})
    with pytest.raises(cfg.ConfigError) as caught:
        cfg.parse(both)
    assert str(caught.value) == (
        "fails to create InferenceServicesConfig: exactly one of podDisruptionBudget.rawDeployment.minAvailable "
        "or podDisruptionBudget.rawDeployment.maxUnavailable must be set")
    cleared = _budgets(tmp_path, {"rawDeployment": {"minAvailable": "50%", "maxUnavailable": None}})
    assert json.loads(cleared["podDisruptionBudget"])["rawDeployment"] == {"minAvailable": "50%"}
    assert cfg.parse(cleared).pod_disruption_budget.for_mode("RawDeployment") == pdb_config.PDBPolicy(
        minAvailable="50%")
    # The whole value null: no entry, so no defaults, as on a manifest install.
    none = data(helm_template(tmp_path, None, "--set", "ome.controller.podDisruptionBudget=null"))
    assert "podDisruptionBudget" not in none
    assert cfg.parse(none).pod_disruption_budget == pdb_config.PDBConfig()


def test_ome_agent_values_reach_the_metadata_job(tmp_path: Path) -> None:
    rendered = data(helm_template(tmp_path, {"ome": {"omeAgent": {
        "image": "registry.example.com/ome-agent", "tag": "v1.3.1",
        "metadataJob": {"serviceAccount": "pvc-reader", "cpuLimit": "2", "backoffLimit": 5,
                        "nodeSelector": {"storage": "fast"}}}}}))
    entry = json.loads(rendered["omeAgent"])
    # v1.3's form of the entry: the Job's settings beside the image (no metadataJob object).
    assert entry["image"] == "registry.example.com/ome-agent:v1.3.1" and "metadataJob" not in entry
    assert entry["serviceAccount"] == "pvc-reader" and entry["memoryLimit"] == "512Mi"
    agent = cfg.parse(rendered).ome_agent
    model = {"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel",
             "metadata": {"name": "m", "uid": "u"}, "spec": {"storage": {"storageUri": "pvc://claim/llama"}}}
    job = metadata_job.build_job(model, claim="claim", sub_path="llama", job_namespace="models",
                                 image=agent.image, cfg=agent.metadata_job, ome_namespace="ome")
    pod = job["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "pvc-reader" and pod["nodeSelector"] == {"storage": "fast"}
    assert pod["containers"][0]["image"] == "registry.example.com/ome-agent:v1.3.1"
    assert pod["containers"][0]["resources"]["limits"]["cpu"] == "2"
    assert job["spec"]["backoffLimit"] == 5


def test_ome_agent_values_reach_the_model_init_and_sidecar_entries(tmp_path: Path) -> None:
    rendered = data(helm_template(tmp_path, {"ome": {"omeAgent": {
        "tag": "v1.3.2", "authType": "OkeWorkloadIdentity", "compartmentId": "ocid1.compartment.team",
        "vaultId": "ocid1.vault.team", "region": "us-chicago-1", "modelInit": {"cpuRequest": 4, "cpuLimit": 8}}}}))
    init, sidecar = json.loads(rendered["modelInit"]), json.loads(rendered["servingSidecar"])
    assert init["image"] == sidecar["image"] == "ghcr.io/moirai-internal/ome-agent:v1.3.2"
    assert (init["cpuRequest"], init["cpuLimit"], init["memoryRequest"]) == ("4", "8", "150Gi")
    assert sidecar["region"] == "us-chicago-1" and sidecar["memoryLimit"] == "4Gi" and "vaultId" not in sidecar
    # The pod webhook injects model-init with them (labels-and-annotations.md, ome.io/inject-model-init).
    settings = pod_mutation.pod_settings(cfg.parse(rendered))
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "demo", "labels": {"ome.io/inferenceservice": "svc"},
                        "annotations": {"ome.io/inject-model-init": "true", "ome.io/base-model-name": "llama",
                                        "ome.io/base-model-format": "safetensors"}},
           "spec": {"serviceAccountName": "runner", "containers": [{"name": "ome-container", "image": "x"}]}}
    request = AdmissionRequest(uid="u", kind="Pod", operation="CREATE", namespace="demo", name="p",
                               username="system:serviceaccount:kube-system:replicaset-controller", obj=pod, old=None)
    [container] = pod_mutation.mutate_pod(request, settings)["spec"]["initContainers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert container["image"] == "ghcr.io/moirai-internal/ome-agent:v1.3.2"
    assert env["OME_AGENT_REGION"] == "us-chicago-1" and env["OME_AGENT_VAULT_ID"] == "ocid1.vault.team"
    assert env["OME_AGENT_AUTH_TYPE"] == "OkeWorkloadIdentity"
    assert container["resources"]["limits"]["cpu"] == "8"


def test_the_generators_rendering_agrees_with_helm(tmp_path: Path) -> None:
    values = default_values()
    controller = values["ome"]["controller"]
    controller["lifecycle"]["scaleDownPodBatchSize"] = 12
    controller["lifecycle"]["forceDelete"] = {"overdueSlack": "2m", "nodeUnreachableThreshold": "5m"}
    controller["lifecycle"]["unschedulableGracePeriod"] = None  # null: left out, as Helm merges values
    controller["rollout"] = {"defaultReadyTimeout": "5m"}
    controller["quotaAcceleratorResources"] = ["google.com/tpu"]
    values["ome"]["omeAgent"]["tag"] = "v2"
    values["ome"]["omeAgent"]["metadataJob"]["ttlSecondsAfterFinished"] = 60
    values["ome"]["omeAgent"]["region"] = "eu-frankfurt-1"
    values["ome"]["omeAgent"]["modelInit"]["memoryLimit"] = None
    controller["podDisruptionBudget"] = {"rawDeployment": {"minAvailable": "50%", "maxUnavailable": None},
                                         "omeNative": None}
    by_helm = helm_template(tmp_path, values)
    by_python = python_rendered(values)
    assert by_helm[CONFIGMAP] == by_python[CONFIGMAP]
    assert args(by_helm) == args(by_python)
    assert "--accelerator-resources=google.com/tpu" in args(by_helm)
    assert data(by_helm)["podDisruptionBudget"] == '{"rawDeployment":{"minAvailable":"50%"}}'
    defaults = default_values()
    assert helm_template(tmp_path)[CONFIGMAP] == python_rendered(defaults)[CONFIGMAP]
