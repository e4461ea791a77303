//go:build tools

// Package tools pins kube-apiserver and kube-scheduler for topogen's
// live-cluster tests. Built by tools/build.sh; never imported by anything.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
