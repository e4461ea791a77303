//go:build tools

// Package tools pins the Kyverno CLI and Kyverno's admission controller for
// topogen's tests. Built by tools/build.sh kyverno and
// tools/build.sh kyverno-admission-controller; never imported by anything.
package tools

import (
	_ "github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno"
	_ "github.com/kyverno/kyverno/cmd/kyverno"
)
