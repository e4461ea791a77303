//go:build tools

// Package tools pins the OPA CLI (opa test, opa check) for topogen's tests of
// the generated Rego. Built by tools/build.sh opa; never imported by anything.
package tools

import (
	_ "github.com/open-policy-agent/opa"
)
