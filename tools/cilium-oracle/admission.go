package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"

	"github.com/cilium/cilium/pkg/k8s/apis/cilium.io/client"
)

// admission is what `kubectl apply` meets in the API server for Cilium's CRDs:
// strict field validation (a field the CRD's structural schema does not
// define is an error, as kubectl applies with --validate=strict) and the
// OpenAPI schema validation, both with the API server's own code
// (k8s.io/apiextensions-apiserver) on the CRDs Cilium v1.20.2 installs.
type admission struct {
	kinds map[string]crdSchema
}

type crdSchema struct {
	validator  validation.SchemaCreateValidator
	structural *structuralschema.Structural
}

func newAdmission(logger *slog.Logger) (*admission, error) {
	a := &admission{kinds: map[string]crdSchema{}}
	for kind, name := range map[string]string{
		"CiliumNetworkPolicy":            client.CNPCRDName,
		"CiliumClusterwideNetworkPolicy": client.CCNPCRDName,
	} {
		crd := client.GetPregeneratedCRD(logger, name)
		// marshalled and read back, as the API server holds it (defaults filled in)
		raw, err := json.Marshal(crd.Spec.Versions[0].Schema)
		if err != nil {
			return nil, err
		}
		var v1 apiextensionsv1.CustomResourceValidation
		if err := json.Unmarshal(raw, &v1); err != nil {
			return nil, err
		}
		var internal apiextensionsinternal.CustomResourceValidation
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(&v1, &internal, nil); err != nil {
			return nil, err
		}
		v, _, err := validation.NewSchemaValidator(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, err
		}
		s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, err
		}
		a.kinds[kind] = crdSchema{validator: v, structural: s}
	}
	return a, nil
}

// admit returns the API server's answer to creating obj (nil: accepted).
func (a *admission) admit(kind string, raw []byte) error {
	s, ok := a.kinds[kind]
	if !ok {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return err
	}
	unknown := pruning.PruneWithOptions(obj, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("strict decoding error: unknown field %s", strings.Join(quoteAll(unknown), ", "))
	}
	if errs := validation.ValidateCustomResource(nil, obj, s.validator); len(errs) > 0 {
		return errs.ToAggregate()
	}
	return nil
}

func quoteAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
