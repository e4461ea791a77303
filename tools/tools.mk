# Pinned CLI tools built from Go modules (see tools/README.md).
# Include from the top-level Makefile:   include tools/tools.mk
# Then `make tools`, or depend on $(TOOLS_KYVERNO) in a test target.
# Binaries live in $${TOPOGEN_CACHE:-$$HOME/.cache/topogen}/bin/<tool>-<version>;
# .tools/bin/<tool> is a symlink to it. A cold kyverno build takes ~4 min on 2 cores;
# the control plane for tests/live (etcd, kube-apiserver, kube-scheduler): see tools/README.md.

TOOLS_DIR   := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
TOOLS_BIN   ?= .tools/bin
TOOLS_LIST  ?= kyverno promtool etcd kube-apiserver kube-scheduler gator opa cilium-oracle \
               kyverno-webhooks kyverno-admission-controller kyverno-reports-controller gatekeeper-controller-manager cyclonus \
               karpenter-kwok kwok argocd-cmp actionlint kueue
TOOLS_BUILD := $(TOOLS_DIR)/build.sh
# Tools only `make bench` uses (never built by `make tools` or `make test`).
TOOLS_BENCH_LIST ?= gatekeeper-mutation-cost
TOOLS_BENCH := $(addprefix $(TOOLS_BIN)/,$(TOOLS_BENCH_LIST))

TOOLS_TARGETS := $(addprefix $(TOOLS_BIN)/,$(TOOLS_LIST))
TOOLS_KYVERNO := $(TOOLS_BIN)/kyverno
# Tools built from a shared module folder (the `| dir` column in build.sh).
TOOLS_FROM_KUBE := $(filter $(addprefix $(TOOLS_BIN)/,kube-apiserver kube-scheduler),$(TOOLS_TARGETS))
TOOLS_FROM_KYVERNO := $(filter $(addprefix $(TOOLS_BIN)/,kyverno-admission-controller kyverno-reports-controller),$(TOOLS_TARGETS))
TOOLS_FROM_GATEKEEPER := $(filter $(addprefix $(TOOLS_BIN)/,gator gatekeeper-controller-manager),$(TOOLS_TARGETS))
TOOLS_GATOR := $(TOOLS_BIN)/gator
TOOLS_OPA   := $(TOOLS_BIN)/opa
TOOLS_CILIUM_ORACLE := $(TOOLS_BIN)/cilium-oracle
TOOLS_CYCLONUS := $(TOOLS_BIN)/cyclonus
TOOLS_ARGOCD_CMP := $(TOOLS_BIN)/argocd-cmp
TOOLS_ACTIONLINT := $(TOOLS_BIN)/actionlint

.PHONY: tools tools-bench tools-clean tools-smoke

tools: $(TOOLS_TARGETS)

tools-bench: $(TOOLS_BENCH)

# Re-run when the pin changes; build.sh itself skips a cached binary and
# touches it, so an unchanged pin costs a few milliseconds.
$(filter-out $(TOOLS_FROM_KUBE) $(TOOLS_FROM_KYVERNO) $(TOOLS_FROM_GATEKEEPER),$(TOOLS_TARGETS)) $(TOOLS_BENCH): $(TOOLS_BIN)/%: $(TOOLS_DIR)/%/go.mod $(TOOLS_DIR)/%/go.sum
	$(TOOLS_BUILD) $*

$(TOOLS_FROM_KUBE): $(TOOLS_BIN)/%: $(TOOLS_DIR)/kube/go.mod $(TOOLS_DIR)/kube/go.sum
	$(TOOLS_BUILD) $*

# Kyverno's admission and reports controllers are built from the CLI's module, tools/kyverno/.
$(TOOLS_FROM_KYVERNO): $(TOOLS_BIN)/%: $(TOOLS_DIR)/kyverno/go.mod $(TOOLS_DIR)/kyverno/go.sum
	$(TOOLS_BUILD) $*

# gator and the controller-manager are built from tools/gatekeeper/ (the module is Gatekeeper's).
$(TOOLS_FROM_GATEKEEPER): $(TOOLS_BIN)/%: $(TOOLS_DIR)/gatekeeper/go.mod $(TOOLS_DIR)/gatekeeper/go.sum
	$(TOOLS_BUILD) $*

# The table in build.sh names each binary (version, build tags): an edit there re-runs it,
# which links the new binary, or just touches a cached one.
$(TOOLS_TARGETS) $(TOOLS_BENCH): $(TOOLS_BUILD)

# cilium-oracle is our own Go code: its sources are prerequisites too.
$(filter $(TOOLS_CILIUM_ORACLE),$(TOOLS_TARGETS)): $(wildcard $(TOOLS_DIR)/cilium-oracle/*.go)

# kyverno-webhooks is a test binary: its test file is part of the pin.
$(TOOLS_BIN)/kyverno-webhooks: $(TOOLS_DIR)/kyverno-webhooks/webhooks_test.go

# cyclonus is built from Go code of ours too (tools/cyclonus/main.go): rebuild on an edit.
$(filter $(TOOLS_CYCLONUS),$(TOOLS_TARGETS)): $(wildcard $(TOOLS_DIR)/cyclonus/*.go)

# gatekeeper-mutation-cost too (tools/gatekeeper-mutation-cost/main.go).
$(TOOLS_BIN)/gatekeeper-mutation-cost: $(wildcard $(TOOLS_DIR)/gatekeeper-mutation-cost/*.go)

# argocd-cmp too (tools/argocd-cmp/*.go on Argo CD v3.6.2's packages; go1.27.3 from its go.mod).
$(filter $(TOOLS_ARGOCD_CMP),$(TOOLS_TARGETS)): $(wildcard $(TOOLS_DIR)/argocd-cmp/*.go)

# Tools from one module are built one after the other, so that under `make -j2 tools` the
# second reuses the first's build cache instead of compiling the same packages beside it.
$(filter $(TOOLS_BIN)/kube-scheduler,$(TOOLS_FROM_KUBE)): | $(TOOLS_BIN)/kube-apiserver
$(filter $(TOOLS_BIN)/kyverno-admission-controller,$(TOOLS_FROM_KYVERNO)): | $(TOOLS_BIN)/kyverno
$(filter $(TOOLS_BIN)/kyverno-reports-controller,$(TOOLS_FROM_KYVERNO)): | $(TOOLS_BIN)/kyverno-admission-controller
$(filter $(TOOLS_BIN)/kyverno-webhooks,$(TOOLS_TARGETS)): | $(TOOLS_BIN)/kyverno-reports-controller
$(filter $(TOOLS_BIN)/gatekeeper-controller-manager,$(TOOLS_FROM_GATEKEEPER)): | $(TOOLS_BIN)/gator

# Removes the links only; the cache outside the repo is kept.
tools-clean:
	rm -f $(TOOLS_TARGETS) $(TOOLS_BENCH)

# Proves the built kyverno CLI works: ClusterPolicy, MutatingPolicy and
# ValidatingPolicy examples with their kyverno-test.yaml files.
tools-smoke: $(TOOLS_KYVERNO)
	$(TOOLS_KYVERNO) test $(TOOLS_DIR)/kyverno/smoke --remove-color
