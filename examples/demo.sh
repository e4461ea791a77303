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

section "the other examples: PyTorchJob on three zones (with GPU nodes, and scaled to zero with a Karpenter NodePool), hostNetwork MPI"
for example in pytorch-three-zone pytorch-scale-from-zero hostnetwork-mpi; do
  $TOPOGEN analyze -c "examples/$example/topogen.yaml" | grep -E "^(HARD_BLOCK|CROSS_ZONE|UNSCHEDULABLE|IDENTITY_MISMATCH)|^  (policies|fix):"
done

section "render: policies, CLI tests, Kustomize and signals for every example"
for example in zone-split pytorch-three-zone pytorch-scale-from-zero hostnetwork-mpi; do
  $TOPOGEN render -c "examples/$example/topogen.yaml" --out "out/$example" || exit 1
  echo "demo: $example rendered under out/$example/ (policies/, kustomize/, monitoring/)"
done
echo "demo: check them with .tools/bin/kyverno test out/zone-split/policies (make tools builds it)"

if [[ $before -ne 1 || $after -ne 0 ]]; then
  echo "demo: unexpected exit codes (before=$before, want 1; after=$after, want 0)" >&2
  exit 1
fi
echo
echo "demo: before is HARD_BLOCK (exit 1), after is clean (exit 0)"
