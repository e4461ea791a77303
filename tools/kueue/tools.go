//go:build tools

// Package tools pins Kueue's controller manager (cmd/kueue) for topogen's live tests.
// Built by tools/build.sh kueue; never imported by anything. The harness reads the
// CRDs and webhook manifests of the same module, and the PyTorchJob and JobSet CRDs of
// the training-operator and jobset modules it requires, from the module cache.
package tools

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
