#!/usr/bin/env bash
# The test command: installs what is missing (venv, control-plane binaries), then runs unit and e2e tests.
# The cold control-plane build takes minutes, so it starts first, in the background, while the venv is
# set up and the unit tests run.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .state
build_log=.state/build-control-plane.log
t0=$SECONDS
bash ome/devcluster/build_control_plane.sh >"$build_log.out" 2>"$build_log" &
build_pid=$!
trap 'kill $build_pid 2>/dev/null || true' EXIT

bash hack/setup-venv.sh
py=.venv/bin/python

echo "== static checks"
.venv/bin/ruff check ome tests bench
.venv/bin/mypy

echo "== unit tests"
set +e
$py -m pytest tests/unit -q -p no:cacheprovider
unit_rc=$?
set -e

echo "== waiting for control-plane binaries (log: $build_log)"
if ! wait $build_pid; then
  echo "control-plane build failed; last lines of $build_log:" >&2
  tail -40 "$build_log" >&2
  exit 1
fi
trap - EXIT
tail -1 "$build_log" >&2

echo "== e2e tests (one local cluster for the run, a namespace per test)"
set +e
$py -m pytest tests/e2e -q -p no:cacheprovider
e2e_rc=$?
set -e
echo "== total $((SECONDS - t0))s"
if [ $unit_rc -ne 0 ] || [ $e2e_rc -ne 0 ]; then exit 1; fi
