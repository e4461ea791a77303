#!/usr/bin/env bash
# `make demo`: the problem and its fix on the bundled zone-split example.
set -uo pipefail
cd "$(dirname "$0")/.."
TOPOGEN=.venv/bin/topogen

section() { printf '\n=== %s ===\n' "$*"; }

section "zone-split BEFORE: coordinator in zone-b, GPU workers in zone-a"
$TOPOGEN analyze -c examples/zone-split/topogen.yaml
before=$?
section "zone-split AFTER: the workloads as topogen's policies admit them"
$TOPOGEN analyze -c examples/zone-split/topogen-after.yaml
after=$?

section "render: Kyverno policies (and their CLI tests) for zone-split"
$TOPOGEN render -c examples/zone-split/topogen.yaml --out out/zone-split -v || exit 1
echo "demo: policies rendered under out/zone-split/policies/ (verify: .tools/bin/kyverno test out/zone-split/policies)"

if [[ $before -ne 1 || $after -ne 0 ]]; then
  echo "demo: unexpected exit codes (before=$before, want 1; after=$after, want 0)" >&2
  exit 1
fi
echo
echo "demo: before is HARD_BLOCK (exit 1), after is clean (exit 0)"
