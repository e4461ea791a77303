//go:build tools

// Package tools pins actionlint for topogen's tests (the example GitHub Actions
// workflows of examples/ci). Built by tools/build.sh actionlint; never imported by anything.
package tools

import (
	_ "github.com/rhysd/actionlint/cmd/actionlint"
)
