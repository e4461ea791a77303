//go:build tools

// Package tools pins the Kyverno CLI for topogen's tests.
// Built by tools/build.sh kyverno; never imported by anything.
package tools

import (
	_ "github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno"
)
