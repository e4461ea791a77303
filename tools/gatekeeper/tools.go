//go:build tools

// Package tools pins gator (Gatekeeper's CLI: gator verify, gator expand) and
// Gatekeeper's controller-manager (the module's root package) for topogen's
// tests. Built by tools/build.sh gator and tools/build.sh
// gatekeeper-controller-manager; never imported by anything.
package tools

import (
	_ "github.com/open-policy-agent/gatekeeper/v3"
	_ "github.com/open-policy-agent/gatekeeper/v3/cmd/gator"
)
