package manifest

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ValidateNamespace checks a namespace given on a command line or in an API
// path as manifests' metadata.namespace is checked: a DNS-1123 label.
func ValidateNamespace(ns string) error {
	return nameError("namespace", ns, validation.IsDNS1123Label(ns))
}

// ValidatePodName checks a pod name given on a command line or in an API
// path as manifests' metadata.name is checked: a DNS-1123 subdomain.
func ValidatePodName(name string) error {
	return nameError("pod name", name, validation.IsDNS1123Subdomain(name))
}

func nameError(what, v string, msgs []string) error {
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("invalid %s %q: %s", what, v, strings.Join(msgs, "; "))
}
