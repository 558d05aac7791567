#!/usr/bin/env bash
# Creates .venv with the project and its dev dependencies; re-runs pip only when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-.venv}
stamp="$venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ -f "$stamp" ]; then exit 0; fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -e '.[dev]'
rm -f "$venv"/.installed-*
touch "$stamp"
echo "[setup-venv] $venv ready" >&2
