#!/usr/bin/env bash
# `make bench`: prints the framework's figures; the cache bench runs against a local dev cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
bash hack/setup-venv.sh
py=.venv/bin/python
state=${OME_DEV_STATE_DIR:-$HOME/.cache/ome/devcluster}
kubeconfig=$(.venv/bin/ome-dev cluster up --state-dir "$state")
echo "== work queue";            $py bench/bench_queue.py
echo "== no-op reconcile";       $py bench/bench_reconcile.py
echo "== cache (fake apiserver)"; $py bench/bench_cache.py --fake --pods 2000 --churn 30000
echo "== cache (real control plane)"
$py bench/bench_cache.py --kubeconfig "$kubeconfig" --pods 1000 --churn 2000 --watchers 80 --node-selector type=kwok
echo "== admission latency";   $py bench/bench_admission.py
echo "== InferenceService (RawDeployment)"; $py bench/bench_isvc.py --kubeconfig "$kubeconfig"
echo "== OMENative InferenceReplicas";     $py bench/bench_omenative.py "$kubeconfig" 100
echo "== Instance rollout (100 single-pod Instances, maxSurge 10%)"; $py bench/bench_rollout.py "$kubeconfig" 100
echo "== the same with a 3 s pod start"; $py bench/bench_rollout.py "$kubeconfig" 100 --pod-start 3s
echo "== fault suite (3 managers, 20 InferenceServices)"; $py bench/chaos.py --state-dir "$state" --services 20
echo "== scale (a fresh cluster in the scale profile)"; $py bench/bench_scale.py --n 20 --idle-seconds 10 --churn-rate 10 --churn-seconds 5 --extra-pods 200 --settle-seconds 5 --apiserver-profile "$(mktemp -d)"
