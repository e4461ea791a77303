//go:build tools

// Package tools pins gator (Gatekeeper's CLI: gator verify, gator expand) for
// topogen's tests. Built by tools/build.sh gator; never imported by anything.
package tools

import (
	_ "github.com/open-policy-agent/gatekeeper/v3/cmd/gator"
)
