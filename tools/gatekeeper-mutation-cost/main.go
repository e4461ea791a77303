// gatekeeper-mutation-cost: the CPU Gatekeeper's mutation system spends per pod on a set
// of mutators, in process, without the webhook around it (bench/gatekeeper_cost.py).
//
//	gatekeeper-mutation-cost PODS.json ROUNDS SET.yaml...
//
// Each SET is a YAML stream of Assign, AssignMetadata and ModifySet objects (other kinds
// are skipped), upserted into a mutation System as the controller-manager does; the pods
// (a JSON list) go through System.Mutate as the mutation webhook's CREATE requests do.
// The sets take turns, ROUNDS times (the first round is a warm-up, not counted); the
// process's CPU (user and system, the garbage collector's included; a collection before
// each pass) is read around each set's pass. Output, one JSON object per line: {"set", "microsPerPod", "changed"}
// per set, "changed" the pods its mutators changed. With MUTATED=FILE, the pods as the
// first set leaves them are written to FILE, a JSON list, for the caller to compare
// with gator's own expansion.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"strconv"
	"syscall"
	"time"

	mutationsunversioned "github.com/open-policy-agent/gatekeeper/v3/apis/mutations/unversioned"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/mutators/assign"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/mutators/assignmeta"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/mutators/modifyset"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/types"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
)

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "gatekeeper-mutation-cost: "+format+"\n", a...)
	os.Exit(2)
}

// mutator builds the mutator of one object, or nil for a kind that is not a mutator.
func mutator(obj map[string]any) (types.Mutator, error) {
	switch obj["kind"] {
	case "Assign":
		a := &mutationsunversioned.Assign{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, a); err != nil {
			return nil, err
		}
		return assign.MutatorForAssign(a)
	case "AssignMetadata":
		a := &mutationsunversioned.AssignMetadata{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, a); err != nil {
			return nil, err
		}
		return assignmeta.MutatorForAssignMetadata(a)
	case "ModifySet":
		a := &mutationsunversioned.ModifySet{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, a); err != nil {
			return nil, err
		}
		return modifyset.MutatorForModifySet(a)
	}
	return nil, nil
}

func system(path string) *mutation.System {
	data, err := os.ReadFile(path)
	if err != nil {
		fail("%v", err)
	}
	sys := mutation.NewSystem(mutation.SystemOpts{})
	dec := yamlutil.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return sys
		} else if err != nil {
			fail("%s: %v", path, err)
		}
		m, err := mutator(obj)
		if err != nil {
			fail("%s: %v", path, err)
		}
		if m != nil {
			if err := sys.Upsert(m); err != nil {
				fail("%s: %v", path, err)
			}
		}
	}
}

func cpu() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mutate takes each pod through the system as a CREATE request; how many it changed.
func mutate(sys *mutation.System, pods []*unstructured.Unstructured) int {
	changed := 0
	for _, u := range pods {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.GetNamespace()}}
		m := &types.Mutable{
			Object: u, Namespace: ns, Source: types.SourceTypeOriginal, Operation: admissionv1.Create,
		}
		did, err := sys.Mutate(context.Background(), m)
		if err != nil {
			fail("%s/%s: %v", u.GetNamespace(), u.GetName(), err)
		}
		if did {
			changed++
		}
	}
	return changed
}

func copies(pods []map[string]any) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(pods))
	for i, p := range pods {
		out[i] = &unstructured.Unstructured{Object: runtime.DeepCopyJSON(p)}
	}
	return out
}

func main() {
	if len(os.Args) < 4 {
		fail("usage: gatekeeper-mutation-cost PODS.json ROUNDS SET.yaml...")
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail("%v", err)
	}
	var pods []map[string]any
	if err := json.Unmarshal(data, &pods); err != nil || len(pods) == 0 {
		fail("%s: not a non-empty JSON list of pods", os.Args[1])
	}
	rounds, err := strconv.Atoi(os.Args[2])
	if err != nil || rounds < 2 {
		fail("ROUNDS: a number of at least 2 (the first is a warm-up)")
	}
	sets := os.Args[3:]
	systems := make([]*mutation.System, len(sets))
	for i, s := range sets {
		systems[i] = system(s)
	}
	if out := os.Getenv("MUTATED"); out != "" {
		objs := copies(pods)
		mutate(systems[0], objs)
		list := make([]map[string]any, len(objs))
		for i, u := range objs {
			list[i] = u.Object
		}
		data, err := json.Marshal(list)
		if err == nil {
			err = os.WriteFile(out, data, 0o644)
		}
		if err != nil {
			fail("%s: %v", out, err)
		}
	}
	spent := make([]time.Duration, len(sets))
	changed := make([]int, len(sets))
	for r := 0; r < rounds; r++ {
		for i, sys := range systems {
			objs := copies(pods)
			goruntime.GC() // each set's pass pays for its own garbage only
			start := cpu()
			n := mutate(sys, objs)
			if r > 0 {
				spent[i] += cpu() - start
			}
			changed[i] = n
		}
	}
	enc := json.NewEncoder(os.Stdout)
	for i, s := range sets {
		per := float64(spent[i].Nanoseconds()) / 1e3 / float64((rounds-1)*len(pods))
		if err := enc.Encode(map[string]any{"set": s, "microsPerPod": per, "changed": changed[i]}); err != nil {
			fail("%v", err)
		}
	}
}
