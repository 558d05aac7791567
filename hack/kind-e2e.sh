#!/usr/bin/env bash
# For users with Docker: the e2e suite against a kind cluster, then OME deployed into it from config/default.
#  1. kind cluster + kwok (in-cluster) with OME's Stages and four fake GPU nodes, as the local cluster has;
#  2. tests/e2e with OME_E2E_KUBECONFIG (tests that restart our own control-plane processes or need the
#     apiserver to dial 127.0.0.1 webhooks skip themselves);
#  3. the image built from this tree, loaded into kind, `kubectl apply -k config/default` (self-signed
#     webhook certificate bootstrap), and the ome-controller-manager rollout.
set -euo pipefail
cd "$(dirname "$0")/.."
source ome/devcluster/versions.env
cluster=${KIND_CLUSTER:-ome}
image=ome-py/manager:dev
ctx="kind-$cluster"
for tool in kind kubectl docker; do
  command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 1; }
done
bash hack/setup-venv.sh
mkdir -p .state
kind get clusters | grep -qx "$cluster" || kind create cluster --name "$cluster"
kind get kubeconfig --name "$cluster" > .state/kind-kubeconfig

kwok_url="https://github.com/kubernetes-sigs/kwok/releases/download/$KWOK_VERSION"
kubectl --context "$ctx" apply -f "$kwok_url/kwok.yaml"
kubectl --context "$ctx" -n kube-system rollout status deployment/kwok-controller --timeout=180s
.venv/bin/ome-dev fake-gpu-nodes --stages | kubectl --context "$ctx" apply -f -
.venv/bin/ome-dev fake-gpu-nodes --kubeconfig .state/kind-kubeconfig --gpu-nodes 4
kubectl --context "$ctx" wait --for=condition=Ready node -l type=kwok --timeout=120s

OME_E2E_KUBECONFIG=$PWD/.state/kind-kubeconfig .venv/bin/python -m pytest tests/e2e -q -p no:cacheprovider

docker build -t "$image" .
kind load docker-image "$image" --name "$cluster"
kubectl --context "$ctx" apply --server-side -k config/default
kubectl --context "$ctx" -n ome set image deployment/ome-controller-manager manager="$image"
kubectl --context "$ctx" -n ome rollout status deployment/ome-controller-manager --timeout=300s
echo "OME is running in kind cluster $cluster (kubectl --context $ctx -n ome get pods)"
