#!/usr/bin/env bash
# `make run`: sets everything up and runs the manager against a local simulated GPU cluster.
# KUBECONFIG_OVERRIDE=path runs against an existing cluster instead (kind, or a real one).
set -euo pipefail
cd "$(dirname "$0")/.."
bash hack/setup-venv.sh
state=${OME_DEV_STATE_DIR:-$HOME/.cache/ome/devcluster}
if [ -n "${KUBECONFIG_OVERRIDE:-}" ]; then
  kubeconfig=$KUBECONFIG_OVERRIDE
else
  kubeconfig=$(.venv/bin/ome-dev cluster up --state-dir "$state")
  echo "local cluster: kubectl --kubeconfig $kubeconfig get nodes   (stop it with: make cluster-down)"
fi
.venv/bin/python -m ome.crds_install --kubeconfig "$kubeconfig" 2>/dev/null || true
exec .venv/bin/ome-manager --kubeconfig "$kubeconfig" --leader-elect \
  --metrics-bind-address 127.0.0.1:8080 --health-probe-bind-address 127.0.0.1:8081 "$@"
