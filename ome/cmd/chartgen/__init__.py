"""The Helm charts `charts/ome-crd` and `charts/ome-resources`, generated from config/ so the two never drift.

`python -m ome.cmd.chartgen [--check]` writes (or checks) both charts. Every object comes from the
manifests in config/ (which come from the API models, the RBAC inspection and the webhook table); the
generator only turns chosen fields into values:

| value | what it sets |
|---|---|
| `ome.controller.image`, `.tag`, `.replicaCount` | the manager Deployment's image and replicas |
| `ome.controller.leaderElection.{leaseDuration,renewDeadline,retryPeriod}` | `--leader-elect-*` timing |
| `ome.controller.kubeAPIQPS`, `.kubeAPIBurst` | `--kube-api-qps`, `--kube-api-burst` (0: no flag) |
| `ome.controller.inferenceServiceMaxConcurrentReconciles`, `...inferenceReplica...` | workers (0: no flag) |
| `ome.controller.configCacheTTL` | `--config-cache-ttl` (a string; an unquoted 0: no flag) |
| `ome.controller.quotaAcceleratorResources` | `--accelerator-resources=a,b` (empty: no flag, all governed) |
| `ome.controller.extraEnv`, `.extraVolumes`, `.extraVolumeMounts` | lists appended as given to the manager |
| | container's env (after `POD_NAMESPACE`, `SECRET_NAME`), the pod's volumes, the container's mounts |
| `ome.inferenceserviceConfig` | every key of the `inferenceservice-config` ConfigMap, as JSON strings |
| `ome.controller.lifecycle` | its `lifecycle` entry (config/'s keys and config/chart/lifecycle.yaml's) |
| `ome.controller.rollout` | its `rollout` entry (`defaultReadyTimeout`, config/chart/controller.yaml) |
| `ome.controller.coordination` | its `coordination` entry (config/chart/coordination.yaml) |
| `ome.controller.eventRecorder.{burstSize,refillInterval}` | its `eventRecorder` entry, the per-object |
| | event budget (config/chart/event_recorder.yaml) |
| `ome.controller.podDisruptionBudget.{rawDeployment,omeNative}` | its `podDisruptionBudget` entry, each |
| | mode's default budget (config/chart/pod_disruption_budget.yaml; a mode set to null has none) |
| `ome.omeAgent.{image,tag,metadataJob.*}` | its `omeAgent` entry, v1.3's form (`image:tag`, the Job keys) |
| `ome.omeAgent.{authType,compartmentId,vaultId,region,modelInit.*}` | its `modelInit` and `servingSidecar` |
| | entries (config/chart/ome_agent.yaml), with the same image |
| `ome.benchmarkJob.{image,tag,cpuRequest,memoryRequest,cpuLimit,memoryLimit}` | `benchmarkjob-config` |
| `webhook.certManager.enabled` | cert-manager Issuer, Certificate, CA injection (config/certmanager); |
| | else the manager's self-signed certificate (`--webhook-cert-bootstrap`, config/default) |
| `modelAgent.enabled` | the model agent DaemonSet and its RBAC (config/modelagent) |

A structured value (`ome.controller.lifecycle`, `.rollout`, `.coordination`, `.eventRecorder`,
`.podDisruptionBudget`, `ome.omeAgent`) writes its entry as Helm's `toJson` does (compact, keys sorted, a
field set to null left out); set to null it writes none, and a JSON string under `ome.inferenceserviceConfig`
with the same key (the pre-v1.3 way) is used instead.

With the default values, `helm template` renders exactly the objects of `config/default` plus the
`benchmarkjob-config` ConfigMap, except for what the docs give the chart but not the kustomize manifests
(`config/chart/`): the `lifecycle` keys of lifecycle.yaml, the `rollout`, `coordination`, `eventRecorder`,
`podDisruptionBudget`, `modelInit` and `servingSidecar` entries; `omeAgent` is written in v1.3's flat form.
`render_defaults` renders these constructs in Python for the unit tests, which check it against the real
`helm template`.
Templates are written as YAML with sentinel strings, replaced by template text afterwards.

The modules: `manifests` reads config/; `chart_values` makes the default values and, in Python, the
ConfigMap data the templates write; `go_format` writes values as Helm's Go functions do; `templates` makes
each template, `chart_files` the charts' files; `rendering` (`render_defaults`) and `config_default` (what
it must equal) serve the tests; `__main__` is the command.
"""
