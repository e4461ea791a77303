//go:build tools

// Package tools pins the Kyverno CLI, Kyverno's admission controller and its
// reports controller for topogen's tests. Built by tools/build.sh kyverno,
// kyverno-admission-controller and kyverno-reports-controller; never imported
// by anything.
package tools

import (
	_ "github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno"
	_ "github.com/kyverno/kyverno/cmd/kyverno"
	_ "github.com/kyverno/kyverno/cmd/reports-controller"
)
