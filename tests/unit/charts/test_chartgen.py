"""The Helm charts are generated from config/ and render to the same objects.

(1) charts/ is what `python -m ome.cmd.chartgen` writes from today's config/ (no drift); (2) rendered with
their default values the charts give exactly config/default's objects (less its Namespace, which Helm's
--create-namespace makes, and with the chart's lifecycle additions of config/chart/lifecycle.yaml) plus the
benchmarkjob-config ConfigMap; with `webhook.certManager.enabled` those
of config/certmanager; with `modelAgent.enabled` also config/modelagent's. The e2e test renders with the
real `helm template` and installs.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from ome.cmd.chartgen.chart_files import CHARTS, charts
from ome.cmd.chartgen.chart_values import STRUCTURED, default_values
from ome.cmd.chartgen.config_default import config_default_objects
from ome.cmd.chartgen.manifests import (
    CONFIG,
    NAMESPACE,
    chart_lifecycle,
    load,
    manager_doc,
    object_key,
    parse,
)
from ome.cmd.chartgen.rendering import render_blocks, render_defaults
from ome.cmd.chartgen.templates import NS
from ome.devcluster.operator_config import CHART_PDB

Obj = dict[str, Any]


def by_key(objs: list[Obj]) -> dict[tuple[str, str, str], Obj]:
    keyed = {object_key(o): o for o in objs}
    assert len(keyed) == len(objs), "no object twice"
    return keyed


def test_committed_charts_are_generated_from_config() -> None:
    files = charts()
    for path, text in files.items():
        committed = CHARTS / path
        assert committed.exists(), f"charts/{path} missing: run python -m ome.cmd.chartgen"
        assert committed.read_text() == text, f"charts/{path} is stale: run python -m ome.cmd.chartgen"
    on_disk = {str(p.relative_to(CHARTS)) for p in CHARTS.rglob("*") if p.is_file()}
    assert on_disk == set(files), "no file under charts/ that the generator does not write"


def test_defaults_render_config_default() -> None:
    rendered = by_key(render_defaults())
    expected = by_key(config_default_objects())
    assert set(rendered) == set(expected)
    for key, obj in expected.items():
        assert rendered[key] == obj, key
    deployment = rendered[("Deployment", "ome", "ome-controller-manager")]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    # The chart's documented settings reach the manager: 4 workers, QPS/burst 100/200, its lease timing.
    for arg in ("--inferenceservice-max-concurrent-reconciles=4", "--kube-api-qps=100", "--kube-api-burst=200",
                "--leader-elect-lease-duration=60s", "--webhook-cert-bootstrap"):
        assert arg in args


def test_every_value_is_a_template_and_the_whole_config_is_values() -> None:
    values = yaml.safe_load((CHARTS / "ome-resources" / "values.yaml").read_text())
    config = yaml.safe_load((CONFIG / "configmap" / "inferenceservice-config.yaml").read_text())
    # Every entry of config/ is a value: as a JSON string, or structured (lifecycle, omeAgent).
    structured = set(STRUCTURED)
    assert values["ome"]["inferenceserviceConfig"] == {k: v for k, v in config["data"].items()
                                                       if k not in structured}
    lifecycle = values["ome"]["controller"]["lifecycle"]
    assert lifecycle == {**json.loads(config["data"]["lifecycle"]), **chart_lifecycle()}
    agent = json.loads(config["data"]["omeAgent"])
    assert f"{values['ome']['omeAgent']['image']}:{values['ome']['omeAgent']['tag']}" == agent["image"]
    assert values["ome"]["omeAgent"]["metadataJob"] == agent["metadataJob"]
    manager = (CHARTS / "ome-resources" / "templates" / "manager.yaml").read_text()
    for path in (".Values.ome.controller.image", ".Values.ome.controller.replicaCount",
                 ".Values.ome.controller.leaderElection.leaseDuration", ".Values.ome.controller.kubeAPIQPS",
                 ".Values.ome.controller.kubeAPIBurst",
                 ".Values.ome.controller.inferenceServiceMaxConcurrentReconciles",
                 ".Values.ome.controller.inferenceReplicaMaxConcurrentReconciles",
                 ".Values.ome.controller.configCacheTTL",
                 ".Values.ome.controller.quotaAcceleratorResources",
                 ".Values.webhook.certManager.enabled"):
        assert path in manager
    template = (CHARTS / "ome-resources" / "templates" / "inferenceservice-config.yaml").read_text()
    for path in (".Values.ome.inferenceserviceConfig", ".Values.ome.controller.lifecycle",
                 ".Values.ome.controller.rollout", ".Values.ome.controller.coordination",
                 ".Values.ome.controller.eventRecorder", ".Values.ome.controller.podDisruptionBudget",
                 ".Values.ome.omeAgent"):
        assert path in template


def test_cert_manager_switch_renders_config_certmanager() -> None:
    rendered = by_key(render_defaults(cert_manager=True))
    expected = by_key(config_default_objects())
    # config/certmanager: no selfsigned component, its Issuer and Certificate, CA injection annotations.
    deployment = copy.deepcopy(by_key([manager_doc()])[("Deployment", "ome", "ome-controller-manager")])
    expected[("Deployment", "ome", "ome-controller-manager")] = deployment
    for doc in load("certmanager", "certificate.yaml"):
        expected[object_key(doc)] = doc
    for key, obj in expected.items():
        if key[0].endswith("WebhookConfiguration"):
            obj["metadata"]["annotations"] = {"cert-manager.io/inject-ca-from": "ome/serving-cert"}
    assert set(rendered) == set(expected)
    for key, obj in expected.items():
        assert rendered[key] == obj, key
    args = rendered[("Deployment", "ome", "ome-controller-manager")]["spec"]["template"]["spec"]["containers"][0]
    assert "--webhook-cert-bootstrap" not in args["args"]


def test_model_agent_switch_adds_config_modelagent() -> None:
    rendered = by_key(render_defaults(model_agent=True))
    base = by_key(render_defaults())
    agent = by_key(load("modelagent", "rbac.yaml") + load("modelagent", "daemonset.yaml"))
    assert set(rendered) == set(base) | set(agent)
    for key, obj in agent.items():
        assert rendered[key] == obj, key


def test_benchmark_config_is_what_the_controller_reads() -> None:
    from ome.controllers.benchmarkjob import builder

    cm = by_key(render_defaults())[("ConfigMap", "ome", "benchmarkjob-config")]
    assert builder.pod_config(cm["data"]) == builder.PodConfig()
    assert json.loads(cm["data"]["benchmarkjob"])["podConfig"]["image"] == builder.DEFAULT_IMAGE


def test_the_chart_sets_the_documented_migration_settings_and_config_does_not() -> None:
    """migration-and-transient-scale.md §Deadline and caps, the Chart and Kustomize manifests columns:
    `stuckPodGracePeriod` 60s, `audit.maxMigrationsPerWindow` 10, `audit.window` 1h, `audit.maxInFlightMigrations`
    3 and `autoMigrate.maxAttempts` 3 with the chart; "Not set" in config/, where a request waits
    (MigrationPolicyUnconfigured)."""
    from ome.config import inferenceservice_config as cfg

    cm = by_key(render_defaults())[("ConfigMap", "ome", "inferenceservice-config")]
    chart = cfg.parse(cm["data"]).lifecycle
    assert chart.migration_caps() == (10, 3600.0, 3)
    assert chart.auto_migrate_attempts() == 3 and chart.stuck_pod_grace_period == "60s"
    assert chart.instance_ready_timeout == "30m"
    kustomize = yaml.safe_load((CONFIG / "configmap" / "inferenceservice-config.yaml").read_text())
    plain = cfg.parse(kustomize["data"]).lifecycle
    assert plain.migration_caps() is None and plain.auto_migrate_attempts() is None
    assert plain.stuck_pod_grace_period is None and plain.instance_ready_timeout == "30m"


def test_the_chart_sets_the_documented_ratio_tolerance_as_its_own_value() -> None:
    """rollout-groups.md §Rolling update: a left-out maintainRatio.tolerance is 5, the ome-resources value
    `ome.controller.coordination.defaultRatioTolerancePercent`; the chart writes it as inferenceservice-config's
    `coordination` entry, and a null value leaves the entry out."""
    from ome.config import inferenceservice_config as cfg

    values = yaml.safe_load((CHARTS / "ome-resources" / "values.yaml").read_text())
    assert values["ome"]["controller"]["coordination"] == {"defaultRatioTolerancePercent": 5}
    template = (CHARTS / "ome-resources" / "templates" / "inferenceservice-config.yaml").read_text()
    assert "{{- with .Values.ome.controller.coordination }}" in template
    cm = by_key(render_defaults())[("ConfigMap", "ome", "inferenceservice-config")]
    assert json.loads(cm["data"]["coordination"]) == {"defaultRatioTolerancePercent": 5}
    assert cfg.parse(cm["data"]).coordination.default_ratio_tolerance_percent == 5
    unset = default_values()
    unset["ome"]["controller"]["coordination"] = None
    text = template.replace(NS.template, NAMESPACE)
    rendered = parse(render_blocks(text, unset))[0]
    assert "coordination" not in rendered["data"]


def test_the_chart_writes_the_event_budget_and_config_does_not() -> None:
    """`ome.controller.eventRecorder` (burstSize 400, refillInterval 5s) is written as the `eventRecorder`
    entry with toJson; a null field is left out, a null value leaves the entry out, and config/configmap has
    none (the manager keeps client-go's 25 per 5m)."""
    from ome.config import inferenceservice_config as cfg
    from ome.framework.events import EventBudget

    values = yaml.safe_load((CHARTS / "ome-resources" / "values.yaml").read_text())
    assert values["ome"]["controller"]["eventRecorder"] == {"burstSize": 400, "refillInterval": "5s"}
    template = (CHARTS / "ome-resources" / "templates" / "inferenceservice-config.yaml").read_text()
    assert "{{- with .Values.ome.controller.eventRecorder }}" in template
    assert '{{- $_ := set $entries "eventRecorder" (toJson .) }}' in template
    cm = by_key(render_defaults())[("ConfigMap", "ome", "inferenceservice-config")]
    assert cm["data"]["eventRecorder"] == '{"burstSize":400,"refillInterval":"5s"}'
    assert cfg.parse(cm["data"]).event_recorder.budget() == EventBudget(burst=400, refill_interval=5.0)

    def entries(event_recorder: Obj | None) -> dict[str, str]:
        changed = default_values()
        changed["ome"]["controller"]["eventRecorder"] = event_recorder
        rendered = by_key(render_defaults(values=changed))
        return dict(rendered[("ConfigMap", "ome", "inferenceservice-config")]["data"])

    no_burst = entries({"burstSize": None, "refillInterval": "2s"})
    assert no_burst["eventRecorder"] == '{"refillInterval":"2s"}'
    assert cfg.parse(no_burst).event_recorder.budget() == EventBudget(burst=25, refill_interval=2.0)
    assert "eventRecorder" not in entries(None)
    assert "eventRecorder" not in entries({"burstSize": None, "refillInterval": None})
    kustomize = yaml.safe_load((CONFIG / "configmap" / "inferenceservice-config.yaml").read_text())
    assert "eventRecorder" not in kustomize["data"]
    assert cfg.parse(kustomize["data"]).event_recorder.budget() == EventBudget()


def _manager_args(values: Obj) -> list[str]:
    rendered = by_key(render_defaults(values=values))
    deployment = rendered[("Deployment", "ome", "ome-controller-manager")]
    return [str(a) for a in deployment["spec"]["template"]["spec"]["containers"][0]["args"]]


def test_the_throughput_and_cache_flags_come_from_the_documented_values() -> None:
    """controller-manager-flags.md §Reconcile throughput and configure-the-controller.md: the values are
    `inferenceServiceMaxConcurrentReconciles`, `inferenceReplicaMaxConcurrentReconciles`, `kubeAPIQPS`,
    `kubeAPIBurst` (chart 4, 4, 100, 200) and `configCacheTTL` ("30s"); the guide's example sets 8 workers."""
    values = default_values()
    controller = values["ome"]["controller"]
    assert {k: controller[k] for k in ("inferenceServiceMaxConcurrentReconciles",
                                       "inferenceReplicaMaxConcurrentReconciles", "kubeAPIQPS", "kubeAPIBurst",
                                       "configCacheTTL")} == {
        "inferenceServiceMaxConcurrentReconciles": 4, "inferenceReplicaMaxConcurrentReconciles": 4,
        "kubeAPIQPS": 100, "kubeAPIBurst": 200, "configCacheTTL": "30s"}
    controller.update(inferenceServiceMaxConcurrentReconciles=8, inferenceReplicaMaxConcurrentReconciles=8,
                      kubeAPIQPS=200, kubeAPIBurst=400, configCacheTTL="10s")
    args = _manager_args(values)
    for arg in ("--inferenceservice-max-concurrent-reconciles=8", "--inferencereplica-max-concurrent-reconciles=8",
                "--kube-api-qps=200", "--kube-api-burst=400", "--config-cache-ttl=10s"):
        assert arg in args
    # The guide's Step 2 order: the four fixed flags, the workers, the cache, the quota, the rate limit.
    assert args[4:10] == ["--inferenceservice-max-concurrent-reconciles=8",
                          "--inferencereplica-max-concurrent-reconciles=8", "--config-cache-ttl=10s",
                          "--accelerator-resources=nvidia.com/gpu,google.com/tpu", "--kube-api-qps=200",
                          "--kube-api-burst=400"]


def test_a_zero_value_leaves_its_flag_out_and_a_quoted_zero_does_not() -> None:
    """A 0 gives the manager its own default (1 worker, no rate limit); for the cache TTL an unquoted 0
    leaves the flag out (30 s), and "0", a string, turns the cache off."""
    values = default_values()
    values["ome"]["controller"].update(inferenceServiceMaxConcurrentReconciles=0, kubeAPIQPS=0, kubeAPIBurst=0,
                                       configCacheTTL=0)
    args = _manager_args(values)
    flags = {a.partition("=")[0] for a in args}
    assert not flags & {"--inferenceservice-max-concurrent-reconciles", "--kube-api-qps", "--kube-api-burst",
                        "--config-cache-ttl"}
    assert "--inferencereplica-max-concurrent-reconciles=4" in args
    values["ome"]["controller"]["configCacheTTL"] = "0"
    assert "--config-cache-ttl=0" in _manager_args(values)


def _manager_pod(values: Obj | None = None) -> Obj:
    rendered = by_key(render_defaults(values=values))
    pod: Obj = rendered[("Deployment", "ome", "ome-controller-manager")]["spec"]["template"]["spec"]
    return pod


def test_the_extra_env_volumes_and_mounts_values_default_to_empty_lists() -> None:
    """configure-the-controller.md: `ome.controller.extraEnv`, `.extraVolumes`, `.extraVolumeMounts`, empty by
    default, so the Deployment is config/'s: POD_NAMESPACE and SECRET_NAME (the certificate's Secret)."""
    from ome.webhooks import cert_bootstrap

    files = charts()
    controller = yaml.safe_load(files["ome-resources/values.yaml"])["ome"]["controller"]
    assert (controller["extraEnv"], controller["extraVolumes"], controller["extraVolumeMounts"]) == ([], [], [])
    manager = files["ome-resources/templates/manager.yaml"]
    for name in ("extraEnv", "extraVolumes", "extraVolumeMounts"):
        assert f"{{{{- with .Values.ome.controller.{name} }}}}" in manager
    container = _manager_pod()["containers"][0]
    assert container["env"][1] == {"name": "SECRET_NAME", "value": cert_bootstrap.DEFAULT_SECRET_NAME}
    assert [e["name"] for e in container["env"]] == ["POD_NAMESPACE", "SECRET_NAME"]


def test_extra_env_volumes_and_mounts_are_appended_after_the_charts_own() -> None:
    values = default_values()
    proxy = {"name": "NO_PROXY", "valueFrom": {"configMapKeyRef": {"name": "proxy", "key": "no_proxy"}}}
    volume = {"name": "corp-ca", "configMap": {"name": "corp-ca"}}
    mount = {"name": "corp-ca", "mountPath": "/etc/ome/ca", "readOnly": True}
    values["ome"]["controller"].update(
        extraEnv=[{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}, proxy,
                  {"name": "SSL_CERT_FILE", "value": "/etc/ome/ca/ca.crt"}],
        extraVolumes=[volume], extraVolumeMounts=[mount])
    pod = _manager_pod(values)
    container = pod["containers"][0]
    assert [e["name"] for e in container["env"]] == ["POD_NAMESPACE", "SECRET_NAME", "HTTPS_PROXY", "NO_PROXY",
                                                     "SSL_CERT_FILE"]
    assert container["env"][3] == proxy
    names = [v["name"] for v in pod["volumes"]]
    assert names.index("cert") < names.index("corp-ca") and pod["volumes"][-1] == volume
    default = _manager_pod()["containers"][0]["volumeMounts"]
    assert container["volumeMounts"] == [*default, mount]


def test_the_chart_writes_the_default_budgets_and_config_does_not() -> None:
    """configure-pod-disruption-budgets.md: "Since v1.3, the ome-resources chart sets the RawDeployment and
    OMENative defaults to maxUnavailable: 1 ... A manifest install has no defaults". The value
    `ome.controller.podDisruptionBudget` is written as the `podDisruptionBudget` entry with toJson; a mode or
    field set to null is left out, a null value (or both modes null) leaves the entry out."""
    from ome.config import inferenceservice_config as cfg
    from ome.config import pdb_config

    values = yaml.safe_load((CHARTS / "ome-resources" / "values.yaml").read_text())
    assert values["ome"]["controller"]["podDisruptionBudget"] == {"rawDeployment": {"maxUnavailable": 1},
                                                                   "omeNative": {"maxUnavailable": 1}}
    template = (CHARTS / "ome-resources" / "templates" / "inferenceservice-config.yaml").read_text()
    assert "{{- with .Values.ome.controller.podDisruptionBudget }}" in template
    assert '{{- $_ := set $entries "podDisruptionBudget" (toJson .) }}' in template
    cm = by_key(render_defaults())[("ConfigMap", "ome", "inferenceservice-config")]
    assert cm["data"]["podDisruptionBudget"] == '{"omeNative":{"maxUnavailable":1},"rawDeployment":{"maxUnavailable":1}}'
    assert cfg.parse(cm["data"]).pod_disruption_budget == CHART_PDB

    def entries(budgets: Obj | None) -> dict[str, str]:
        changed = default_values()
        changed["ome"]["controller"]["podDisruptionBudget"] = budgets
        rendered = by_key(render_defaults(values=changed))
        return dict(rendered[("ConfigMap", "ome", "inferenceservice-config")]["data"])

    native_off = entries({"rawDeployment": {"maxUnavailable": "25%"}, "omeNative": None})
    assert native_off["podDisruptionBudget"] == '{"rawDeployment":{"maxUnavailable":"25%"}}'
    assert cfg.parse(native_off).pod_disruption_budget.for_mode("OMENative") is None
    assert "podDisruptionBudget" not in entries(None)
    assert "podDisruptionBudget" not in entries({"rawDeployment": None, "omeNative": None})
    kustomize = yaml.safe_load((CONFIG / "configmap" / "inferenceservice-config.yaml").read_text())
    assert "podDisruptionBudget" not in kustomize["data"]
    assert cfg.parse(kustomize["data"]).pod_disruption_budget == pdb_config.PDBConfig()
