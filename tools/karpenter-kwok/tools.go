//go:build tools

// Package tools pins Karpenter's controller with its KWOK cloud provider
// (sigs.k8s.io/karpenter/kwok) for topogen's live-cluster tests. Built by
// tools/build.sh karpenter-kwok; never imported by anything.
package tools

import (
	_ "sigs.k8s.io/karpenter/kwok"
)
