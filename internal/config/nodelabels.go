package config

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// validateNodeLabels checks nodeLabels as the API server checks labels
// (qualified name keys, label values), in key order.
func validateNodeLabels(labels map[string]string) []error {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var errs []error
	for _, k := range keys {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("nodeLabels: invalid key %q: %s", k, strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(labels[k]); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("nodeLabels.%s: invalid value %q: %s", k, labels[k], strings.Join(msgs, "; ")))
		}
	}
	return errs
}
