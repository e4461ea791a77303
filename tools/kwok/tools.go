//go:build tools

// Package tools pins the KWOK controller (sigs.k8s.io/kwok/cmd/kwok) for
// topogen's live-cluster tests. Built by tools/build.sh kwok; never imported
// by anything.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
