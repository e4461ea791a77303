#!/usr/bin/env bash
# Build a pinned CLI tool from Go modules into a cache outside the repo and
# link it as <repo>/.tools/bin/<tool>.
#
#   tools/build.sh TOOL...        (TOOL: see the table below)
#
# Each tool is a small Go module of our own in tools/<tool>/ (go.mod, go.sum,
# tools.go) that requires the upstream release and repeats that release's
# replace directives, because `go install pkg@version` ignores them.
# The version in the binary's name is the one go.mod requires, so bumping the
# pin builds a new file; an existing file is never rebuilt (warm machines skip).
#
# Environment:
#   TOPOGEN_CACHE      cache root (default $HOME/.cache/topogen); binaries go to
#                      $TOPOGEN_CACHE/bin/<tool>-<version>
#   TOOLS_FORCE=1      rebuild even if the cached binary exists
#   GOPROXY, GOMODCACHE, GOCACHE, GOTOOLCHAIN are honoured as usual; if the
#   local Go is older than the module needs, GOTOOLCHAIN is set to the
#   module's `toolchain` (or `go`) version, which the module proxy serves.
set -euo pipefail

# ---------------------------------------------------------------------------
# Tool table, one line per tool:
#   name | module whose version names the binary | package to build | ldflags
#        [| module folder under tools/, when it is not tools/<name>/]
#        [| options, space-separated:
#           src: the binary's name also carries a hash of the folder's *.go,
#             for a tool whose code is ours (a changed source builds a new file);
#           tags=A,B: Go build tags (upstream's own, to leave out code the tests never
#             run); the binary's name carries them too, so a changed list is a new file]
# In ldflags, @VERSION@ is replaced by that module's version.
# Adding a tool = one line here + a tools/<name>/ module (go.mod, go.sum,
# tools.go blank-importing the package). Several tools may share one module
# (kube-apiserver and kube-scheduler both come from tools/kube/).
# A tool whose module folder holds *_test.go files is a test binary instead: build.sh
# copies the pinned module's source out of the module cache, adds those files to the
# package named in the table, and builds the package's tests (`go test -c`), so a test
# of ours can call the upstream package's unexported code (kyverno-webhooks: how
# Kyverno's admission controller registers its webhooks for a set of policies).
# etcd is built from tools/etcd/main.go, a two-line main calling etcdmain.Main
# (upstream's main package sits in a module whose replace lines point into
# its own repository). cilium-oracle is our own program on Cilium's packages
# (tools/cilium-oracle/*.go, hashed into its name). gator comes from tools/gatekeeper/ (the module is
# Gatekeeper); opa needs no ldflags (its version is a constant in the source).
# kyverno-admission-controller (cmd/kyverno, the admission controller's main)
# and kyverno-reports-controller (cmd/reports-controller: background scans and
# the aggregation of admission reports into PolicyReports) share tools/kyverno/
# with the CLI; gatekeeper-controller-manager (the
# Gatekeeper module's root package, upstream's `manager` binary) shares
# tools/gatekeeper/ with gator. karpenter-kwok is Karpenter's controller with its
# KWOK cloud provider (the module's kwok/ main package); its go.mod carries
# `toolchain go1.27.3` (Karpenter v1.15.0 asks for 1.26.9). kwok is the KWOK
# controller (cmd/kwok), whose version is a constant in its source.
# argocd-cmp is our own program on Argo CD v3.6.2's packages (the CMP server, the
# repo-server's GenerateManifests and discovery, the ApplicationSet controller's
# rendering, kustomize); v3.6 asks for go 1.27, so its go.mod carries
# `toolchain go1.27.3`, which choose_toolchain exports as GOTOOLCHAIN for that build only.
# promtool is built with Prometheus's `remove_all_sd` tag: no service-discovery plugins
# (AWS, Azure, GCE, Kubernetes ...), which `check rules` and `test rules` never load;
# about half the cold build's CPU, time and caches.
# kueue is Kueue's controller manager (cmd/kueue, upstream's `manager`), run out of cluster
# by tests/live/kueue_harness.py. gatekeeper-mutation-cost is our own program on
# Gatekeeper's mutation packages (tools/gatekeeper-mutation-cost/main.go, the versions of
# tools/gatekeeper): the bench's in-process measure of the mutators' CPU per pod, built
# by `make bench` only (tools.mk: TOOLS_BENCH_LIST).
# ---------------------------------------------------------------------------
TOOLS_TABLE='
kyverno | github.com/kyverno/kyverno | github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno | -X github.com/kyverno/kyverno/pkg/version.BuildVersion=@VERSION@
promtool | github.com/prometheus/prometheus | github.com/prometheus/prometheus/cmd/promtool | -X github.com/prometheus/common/version.Version=@VERSION@ | | tags=remove_all_sd
etcd | go.etcd.io/etcd/server/v3 | topogen.local/tools/etcd |
kube-apiserver | k8s.io/kubernetes | k8s.io/kubernetes/cmd/kube-apiserver | -X k8s.io/component-base/version.gitVersion=@VERSION@ -X k8s.io/component-base/version.gitTreeState=clean | kube
kube-scheduler | k8s.io/kubernetes | k8s.io/kubernetes/cmd/kube-scheduler | -X k8s.io/component-base/version.gitVersion=@VERSION@ -X k8s.io/component-base/version.gitTreeState=clean | kube
gator | github.com/open-policy-agent/gatekeeper/v3 | github.com/open-policy-agent/gatekeeper/v3/cmd/gator | -X github.com/open-policy-agent/gatekeeper/v3/pkg/version.Version=@VERSION@ | gatekeeper
opa | github.com/open-policy-agent/opa | github.com/open-policy-agent/opa |
cilium-oracle | github.com/cilium/cilium | topogen.local/tools/cilium-oracle | | cilium-oracle | src
kyverno-webhooks | github.com/kyverno/kyverno | github.com/kyverno/kyverno/pkg/controllers/webhook |
kyverno-admission-controller | github.com/kyverno/kyverno | github.com/kyverno/kyverno/cmd/kyverno | -X github.com/kyverno/kyverno/pkg/version.BuildVersion=@VERSION@ | kyverno
kyverno-reports-controller | github.com/kyverno/kyverno | github.com/kyverno/kyverno/cmd/reports-controller | -X github.com/kyverno/kyverno/pkg/version.BuildVersion=@VERSION@ | kyverno
gatekeeper-controller-manager | github.com/open-policy-agent/gatekeeper/v3 | github.com/open-policy-agent/gatekeeper/v3 | -X github.com/open-policy-agent/gatekeeper/v3/pkg/version.Version=@VERSION@ | gatekeeper
cyclonus | github.com/mattfenwick/cyclonus | topogen.local/tools/cyclonus | -X github.com/mattfenwick/cyclonus/pkg/cli.version=@VERSION@ | cyclonus | src
karpenter-kwok | sigs.k8s.io/karpenter | sigs.k8s.io/karpenter/kwok | -X sigs.k8s.io/karpenter/pkg/operator.Version=@VERSION@
kwok | sigs.k8s.io/kwok | sigs.k8s.io/kwok/cmd/kwok |
argocd-cmp | github.com/argoproj/argo-cd/v3 | topogen.local/tools/argocd-cmp | | argocd-cmp | src
actionlint | github.com/rhysd/actionlint | github.com/rhysd/actionlint/cmd/actionlint | -X github.com/rhysd/actionlint.version=@VERSION@
kueue | sigs.k8s.io/kueue | sigs.k8s.io/kueue/cmd/kueue | -X sigs.k8s.io/kueue/pkg/version.GitVersion=@VERSION@
gatekeeper-mutation-cost | github.com/open-policy-agent/gatekeeper/v3 | topogen.local/tools/gatekeeper-mutation-cost | | gatekeeper-mutation-cost | src
'

tmp=
die() { printf 'tools/build.sh: %s\n' "$*" >&2; exit 2; }

script_dir=$(cd "$(dirname "$0")" && pwd -P)
repo_root=$(cd "$script_dir/.." && pwd -P)
cache_root=${TOPOGEN_CACHE:-${HOME:?HOME is not set}/.cache/topogen}

trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; printf '%s' "${s%"${s##*[![:space:]]}"}"; }

# lookup TOOL -> sets t_module t_package t_ldflags t_dir t_src (src or empty) t_tags
lookup() {
    local line name opts opt
    while IFS= read -r line; do
        [ -n "$(trim "$line")" ] || continue
        IFS='|' read -r name t_module t_package t_ldflags t_dir opts <<<"$line"
        if [ "$(trim "$name")" = "$1" ]; then
            t_module=$(trim "$t_module"); t_package=$(trim "$t_package")
            t_ldflags=$(trim "$t_ldflags"); t_dir=$(trim "$t_dir")
            t_dir=${t_dir:-$1}; t_src=; t_tags=
            for opt in $opts; do
                case $opt in
                    src) t_src=src ;;
                    tags=?*) t_tags=${opt#tags=} ;;
                    *) die "tool table, $1: unknown option '$opt'" ;;
                esac
            done
            return 0
        fi
    done <<<"$TOOLS_TABLE"
    return 1
}

known_tools() { printf '%s\n' "$TOOLS_TABLE" | awk -F'|' 'NF>1{gsub(/ /,"",$1); printf "%s ", $1}'; }

# Version of MODULE as required in GOMOD (single-line or block require).
required_version() {
    awk -v m="$1" '
        $1 == "require" && $2 == m { print $3; exit }
        $1 == m && $2 ~ /^v/       { print $2; exit }
    ' "$2"
}

# "1.26.6" -> comparable integer
ver_num() { awk -F. '{ printf "%d%04d%04d\n", $1, $2, $3 }' <<<"${1#go}"; }

# Pick GOTOOLCHAIN. A `toolchain goX.Y.Z` line in the tool's go.mod pins the
# exact Go (reproducible binary; the local go is used when it is that version,
# otherwise the module proxy serves it). Without one, keep the local Go when
# it satisfies the `go` line, else ask for exactly that version.
choose_toolchain() {
    local gomod=$1 need tc local_v
    tc=$(awk '$1 == "toolchain" { print $2; exit }' "$gomod")
    if [ -n "$tc" ]; then
        export GOTOOLCHAIN=$tc
        return
    fi
    need=$(awk '$1 == "go" { print $2; exit }' "$gomod")
    local_v=$(GOTOOLCHAIN=local go env GOVERSION)
    local_v=${local_v#go}; local_v=${local_v%%[!0-9.]*}
    if [ "$(ver_num "$local_v")" -ge "$(ver_num "$need")" ]; then
        export GOTOOLCHAIN=local
    else
        export GOTOOLCHAIN=go$need
    fi
}

build_one() {
    local tool=$1 moddir gomod version out start secs size
    lookup "$tool" || die "unknown tool '$tool' (known: $(known_tools))"
    moddir=$script_dir/$t_dir
    gomod=$moddir/go.mod
    [ -f "$gomod" ] && [ -f "$moddir/go.sum" ] || die "$moddir: missing go.mod or go.sum"
    version=$(required_version "$t_module" "$gomod")
    [ -n "$version" ] || die "$gomod: does not require $t_module"

    out=$cache_root/bin/$tool-$version${t_tags:+-${t_tags//,/-}}
    if [ "$t_src" = src ]; then
        # our own code: a change to it (or to the pins) is a new binary
        out=$out-$(cd "$moddir" && cat go.mod go.sum $(LC_ALL=C ls ./*.go) | sha256sum | cut -c1-12)
    elif compgen -G "$moddir/*_test.go" >/dev/null; then  # the test files are part of the pin
        out=$out-$(cat "$moddir"/*_test.go | sha256sum | cut -c1-12)
    fi
    if [ -x "$out" ] && [ "${TOOLS_FORCE:-0}" != 1 ]; then
        echo "$tool $version: cached at $out"
        touch "$out"   # newer than go.mod, so make sees the link up to date
    else
        command -v go >/dev/null || die "go is not on PATH"
        choose_toolchain "$gomod"
        mkdir -p "$cache_root/bin"
        tmp=$(mktemp "$cache_root/bin/.$tool-$version.XXXXXX")
        trap 'rm -f "$tmp"' EXIT
        echo "$tool $version: building $t_package (GOTOOLCHAIN=$GOTOOLCHAIN) ..."
        start=$(date +%s)
        if compgen -G "$moddir/*_test.go" >/dev/null; then
            build_test_binary "$moddir" "$version"
        else
        (
            cd "$moddir"
            # GOWORK=off: ignore any go.work above us. -mod=readonly: go.sum
            # is committed and must verify every download.
            GOWORK=off CGO_ENABLED=0 go build -mod=readonly -trimpath \
                -buildvcs=false -tags "$t_tags" \
                -ldflags "-s -w ${t_ldflags//@VERSION@/$version}" \
                -o "$tmp" "$t_package"
        )
        fi
        mv -f "$tmp" "$out"
        trap - EXIT
        secs=$(( $(date +%s) - start ))
        size=$(wc -c <"$out" | tr -d ' ')
        printf '%s %s: built in %dm%02ds, %s bytes (%d MiB) -> %s\n' \
            "$tool" "$version" $((secs / 60)) $((secs % 60)) "$size" \
            $((size / 1048576)) "$out"
    fi

    mkdir -p "$repo_root/.tools/bin"
    ln -sfn "$out" "$repo_root/.tools/bin/$tool"
    echo "$tool: $repo_root/.tools/bin/$tool -> $out"
}

# The test binary of $t_package with the tool folder's *_test.go added (see the table).
build_test_binary() {
    local moddir=$1 version=$2 src work rel
    src=$(cd "$moddir" && GOWORK=off go mod download -json "$t_module@$version" \
        | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
    [ -d "$src" ] || die "cannot download $t_module@$version"
    work=$(mktemp -d "$cache_root/bin/.$tool-src.XXXXXX")
    trap 'rm -f "$tmp"; chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
    mkdir "$work/src" "$work/mod"
    # the module's Go code (its tests, docs, charts and test data are not needed)
    (cd "$src" && cp -r go.mod go.sum $(ls -d api cmd ext pkg 2>/dev/null) "$work/src/")
    chmod -R u+w "$work/src"
    rel=${t_package#"$t_module"/}
    cp "$moddir"/*_test.go "$work/src/$rel/"
    cp "$moddir/go.mod" "$moddir/go.sum" "$work/mod/"
    printf '\nreplace %s => %s\n' "$t_module" "$work/src" >>"$work/mod/go.mod"
    (
        cd "$work/mod"
        GOWORK=off CGO_ENABLED=0 go test -c -mod=mod -trimpath -buildvcs=false \
            -ldflags "-s -w" -o "$tmp" "$t_package"
    )
    chmod -R u+w "$work"
    rm -rf "$work"
    trap 'rm -f "$tmp"' EXIT
}

[ $# -ge 1 ] || die "usage: tools/build.sh TOOL... (known: $(known_tools))"
for t in "$@"; do
    build_one "$t"
done
