//go:build tools

// Package tools pins promtool for topogen's tests (check/test of the generated
// Prometheus rules). Built by tools/build.sh promtool; never imported by anything.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
