#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler (and kubectl when the machine's is
# older than 1.35), etcd, kwok and helm from the Go module proxy into a cache keyed by their versions
# (helm is checked by its own version inside that directory, so a new helm pin rebuilds only helm).
# Prints the bin directory on the last line of stdout. Binaries whose --version matches are skipped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"   # the one place versions are pinned
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=${GOTOOLCHAIN:-local}

cache_root=${OME_CACHE_DIR:-$HOME/.cache/ome}
key="kube-${KUBE_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
root="$cache_root/k8s/$key"
bin="$root/bin"
mkdir -p "$bin" "$root/src"
log() { printf '[build-control-plane %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

has_version() { # binary, expected substring
  local flag=(--version)
  [ "$1" = kubectl ] && flag=(version --client)  # kubectl has no --version
  [ -x "$bin/$1" ] && "$bin/$1" "${flag[@]}" 2>/dev/null | grep -qF -- "$2"
}

# Rewrites a module's go.mod replace block for use from a wrapper module: local staging paths
# (./staging/src/k8s.io/foo) become the published module at the matching version.
gen_replaces() { # gomod_path staging_version
  python3 - "$1" "$2" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
version = sys.argv[2]
entries = []
for block in re.findall(r'^replace\s*\((.*?)^\)', text, flags=re.S | re.M):
    entries += [l.strip() for l in block.splitlines() if l.strip() and not l.strip().startswith("//")]
entries += re.findall(r'^replace\s+([^(].*)$', text, flags=re.M)
out = []
for e in entries:
    left, right = [s.strip() for s in e.split("=>")]
    target = right.split()
    if target[0].startswith("./") or target[0].startswith("../"):
        out.append(f"\t{left.split()[0]} => {left.split()[0]} {version}")
    else:
        out.append(f"\t{e}")
print("replace (\n" + "\n".join(out) + "\n)" if out else "")
PY
}

mod_gomod() { # module@version -> path of its go.mod in the module cache
  (cd "$root/src" && go mod download -json "$1") | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])'
}

build_kube() {
  local want=("kube-apiserver" "kube-controller-manager" "kube-scheduler")
  local kubectl_minor
  kubectl_minor=$(kubectl version --client -o json 2>/dev/null | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["clientVersion"]["minor"].rstrip("+")))' 2>/dev/null || echo 0)
  if [ "$kubectl_minor" -lt 35 ]; then want+=("kubectl"); fi
  local todo=()
  for b in "${want[@]}"; do has_version "$b" "$KUBE_VERSION" && log "$b $KUBE_VERSION cached" || todo+=("$b"); done
  if [ ${#todo[@]} -eq 0 ]; then return 0; fi
  local dir="$root/src/kube" minor patch
  mkdir -p "$dir"
  minor=$(echo "$KUBE_VERSION" | cut -d. -f2); patch=$(echo "$KUBE_VERSION" | cut -d. -f3)
  log "downloading k8s.io/kubernetes@$KUBE_VERSION (large; first time takes a few minutes)"
  local gomod; gomod=$(mod_gomod "k8s.io/kubernetes@$KUBE_VERSION")
  {
    echo "module ome.local/kubebuild"
    echo
    grep -E '^go [0-9]' "$gomod"
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    gen_replaces "$gomod" "v0.$minor.$patch"
  } > "$dir/go.mod"
  { echo "//go:build tools"; echo; echo "package tools"; echo; echo "import ("
    for b in "${todo[@]}"; do echo "	_ \"k8s.io/kubernetes/cmd/$b\""; done; echo ")"; } > "$dir/tools.go"
  log "resolving Kubernetes dependencies"
  (cd "$dir" && go mod tidy >&2)
  local major=1 ldflags
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
  ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION -X k8s.io/client-go/pkg/version.gitMajor=$major -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  for b in "${todo[@]}"; do
    log "building $b $KUBE_VERSION"
    local t0=$SECONDS
    (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$bin/$b" "k8s.io/kubernetes/cmd/$b")
    log "built $b in $((SECONDS - t0))s"
  done
}

build_etcd() {
  has_version etcd "${ETCD_VERSION#v}" && { log "etcd $ETCD_VERSION cached"; return 0; }
  local dir="$root/src/etcd"
  mkdir -p "$dir"
  cat > "$dir/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  printf 'module ome.local/etcdbuild\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" > "$dir/go.mod"
  log "building etcd $ETCD_VERSION"
  local t0=$SECONDS
  (cd "$dir" && go mod tidy >&2 && go build -trimpath -ldflags "-s -w" -o "$bin/etcd" .)
  log "built etcd in $((SECONDS - t0))s"
}

build_kwok() {
  has_version kwok "$KWOK_VERSION" && { log "kwok $KWOK_VERSION cached"; return 0; }
  local dir="$root/src/kwok"
  mkdir -p "$dir"
  local gomod; gomod=$(mod_gomod "sigs.k8s.io/kwok@$KWOK_VERSION")
  {
    echo "module ome.local/kwokbuild"
    echo
    grep -E '^go [0-9]' "$gomod"
    echo "require sigs.k8s.io/kwok $KWOK_VERSION"
    gen_replaces "$gomod" "$KWOK_VERSION"
  } > "$dir/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/kwok/cmd/kwok"\n' > "$dir/tools.go"
  log "building kwok $KWOK_VERSION"
  local t0=$SECONDS
  (cd "$dir" && go mod tidy >&2 && go build -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" -o "$bin/kwok" sigs.k8s.io/kwok/cmd/kwok)
  log "built kwok in $((SECONDS - t0))s"
}

build_helm() {
  [ -n "${HELM_VERSION:-}" ] || return 0
  if [ -x "$bin/helm" ] && "$bin/helm" version --template '{{.Version}}' 2>/dev/null | grep -qxF -- "$HELM_VERSION"; then
    log "helm $HELM_VERSION cached"; return 0
  fi
  local dir="$root/src/helm"
  mkdir -p "$dir"
  local gomod; gomod=$(mod_gomod "helm.sh/helm/v3@$HELM_VERSION")
  {
    echo "module ome.local/helmbuild"
    echo
    grep -E '^go [0-9]' "$gomod"
    echo "require helm.sh/helm/v3 $HELM_VERSION"
    gen_replaces "$gomod" "$HELM_VERSION"
  } > "$dir/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "helm.sh/helm/v3/cmd/helm"\n' > "$dir/tools.go"
  log "building helm $HELM_VERSION"
  local t0=$SECONDS
  (cd "$dir" && go mod tidy >&2 && go build -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" -o "$bin/helm" helm.sh/helm/v3/cmd/helm)
  log "built helm in $((SECONDS - t0))s"
}

start=$SECONDS
build_etcd
build_kwok
build_kube
build_helm
log "control plane ready in $bin ($((SECONDS - start))s)"
echo "$bin"
