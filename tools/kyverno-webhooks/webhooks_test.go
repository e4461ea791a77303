// Kyverno's own webhook registration, as a test binary: the MutatingWebhookConfiguration
// and ValidatingWebhookConfiguration that Kyverno's admission controller (v1.19.1, the
// pinned module) builds for a set of policies, printed as JSON. topogen's tests feed it
// the generated CEL policies to see how narrowly their webhooks are scoped
// (tests/kyverno/test_webhook_scope.py).
//
// tools/build.sh kyverno-webhooks overlays this file into package
// github.com/kyverno/kyverno/pkg/controllers/webhook (the builders are unexported) and
// builds the package's test binary. Run it as
//
//	TOPOGEN_POLICIES=DIR kyverno-webhooks -test.run TestTopogenWebhooks
//
// DIR holds YAML files of MutatingPolicy and ValidatingPolicy objects (policies.kyverno.io);
// the JSON goes to the file named by TOPOGEN_WEBHOOKS_OUT. TOPOGEN_KYVERNO_CONFIG, when set,
// is the data of Kyverno's ConfigMap as JSON (e.g. {"webhooks": "..."}, as the Helm chart
// sets it), loaded as the controller loads it.
package webhook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	policiesv1beta1 "github.com/kyverno/api/api/policies.kyverno.io/v1beta1"
	kyvernov1listers "github.com/kyverno/kyverno/pkg/client/listers/kyverno/v1"
	policiesv1beta1listers "github.com/kyverno/kyverno/pkg/client/listers/policies.kyverno.io/v1beta1"
	"github.com/kyverno/kyverno/pkg/config"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1listers "k8s.io/client-go/listers/coordination/v1"
	rbacv1listers "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"
)

func TestTopogenWebhooks(t *testing.T) {
	dir := os.Getenv("TOPOGEN_POLICIES")
	out := os.Getenv("TOPOGEN_WEBHOOKS_OUT")
	if dir == "" || out == "" {
		t.Skip("TOPOGEN_POLICIES and TOPOGEN_WEBHOOKS_OUT are not set")
	}
	index := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	mpols, vpols, leases := index(), index(), index()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			switch meta.Kind {
			case "MutatingPolicy":
				var p policiesv1beta1.MutatingPolicy
				if err := yaml.UnmarshalStrict([]byte(doc), &p); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				_ = mpols.Add(&p)
			case "ValidatingPolicy":
				var p policiesv1beta1.ValidatingPolicy
				if err := yaml.UnmarshalStrict([]byte(doc), &p); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				_ = vpols.Add(&p)
			}
		}
	}
	// the controller registers policy webhooks only while its lease says it is alive
	_ = leases.Add(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name:        "kyverno-health",
		Namespace:   config.KyvernoNamespace(),
		Annotations: map[string]string{AnnotationLastRequestTime: time.Now().Format(time.RFC3339)},
	}})
	c := &controller{
		cpolLister:         kyvernov1listers.NewClusterPolicyLister(index()),
		polLister:          kyvernov1listers.NewPolicyLister(index()),
		vpolLister:         policiesv1beta1listers.NewValidatingPolicyLister(vpols),
		nvpolLister:        policiesv1beta1listers.NewNamespacedValidatingPolicyLister(index()),
		gpolLister:         policiesv1beta1listers.NewGeneratingPolicyLister(index()),
		ngpolLister:        policiesv1beta1listers.NewNamespacedGeneratingPolicyLister(index()),
		ivpolLister:        policiesv1beta1listers.NewImageValidatingPolicyLister(index()),
		nivpolLister:       policiesv1beta1listers.NewNamespacedImageValidatingPolicyLister(index()),
		mpolLister:         policiesv1beta1listers.NewMutatingPolicyLister(mpols),
		nmpolLister:        policiesv1beta1listers.NewNamespacedMutatingPolicyLister(index()),
		leaseLister:        coordinationv1listers.NewLeaseLister(leases),
		clusterroleLister:  rbacv1listers.NewClusterRoleLister(index()),
		stateRecorder:      NewStateRecorder(nil),
		celExpressionCache: NewExpressionCache(),
		servicePort:        443,
	}
	cfg := config.NewDefaultConfiguration(false)
	if data := os.Getenv("TOPOGEN_KYVERNO_CONFIG"); data != "" {
		cm := &corev1.ConfigMap{}
		if err := json.Unmarshal([]byte(data), &cm.Data); err != nil {
			t.Fatal(err)
		}
		cfg.Load(cm)
	}
	ctx := context.Background()
	mutating, err := c.buildResourceMutatingWebhookConfiguration(ctx, cfg, []byte("ca"))
	if err != nil {
		t.Fatal(err)
	}
	validating, err := c.buildResourceValidatingWebhookConfiguration(ctx, cfg, []byte("ca"))
	if err != nil {
		t.Fatal(err)
	}
	text, err := json.MarshalIndent(map[string]any{"mutating": mutating, "validating": validating}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, text, 0o644); err != nil {
		t.Fatal(err)
	}
}
