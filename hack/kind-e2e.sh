#!/usr/bin/env bash
# For users with Docker: a kind cluster running the image built from this tree, then tests/e2e against it.
set -euo pipefail
cd "$(dirname "$0")/.."
cluster=${KIND_CLUSTER:-ome}
image=ome-py/manager:dev
command -v kind >/dev/null || { echo "kind is required (https://kind.sigs.k8s.io)" >&2; exit 1; }
bash hack/setup-venv.sh
kind get clusters | grep -qx "$cluster" || kind create cluster --name "$cluster"
docker build -t "$image" .
kind load docker-image "$image" --name "$cluster"
kubectl --context "kind-$cluster" apply --server-side -k config/default
kubectl --context "kind-$cluster" -n ome set image deployment/ome-controller-manager manager="$image"
kubectl --context "kind-$cluster" -n ome rollout status deployment/ome-controller-manager --timeout=180s
kind get kubeconfig --name "$cluster" > .state/kind-kubeconfig
OME_E2E_KUBECONFIG=$PWD/.state/kind-kubeconfig .venv/bin/python -m pytest tests/e2e -q
