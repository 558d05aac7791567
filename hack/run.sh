#!/usr/bin/env bash
# `make run`: sets everything up and serves the sample model on a local simulated GPU cluster
# (see ome/cmd/demo.py). Extra arguments go to the demo, e.g. `make run ARGS=--exit-when-ready`;
# `--kubeconfig PATH` uses an existing cluster (kind, or a real one) instead of the local one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash hack/setup-venv.sh
bash ome/devcluster/build_control_plane.sh
exec .venv/bin/python -m ome.cmd.demo "$@"
