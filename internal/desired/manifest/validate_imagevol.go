package manifest

import (
	"slices"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateImageVolume is the API server's validateImageVolumeSource (a
// reference, a known pull policy), and the reference parsed as a
// container's image is.
func validateImageVolume(iv *corev1.ImageVolumeSource, p *field.Path) field.ErrorList {
	var all field.ErrorList
	rp := p.Child("reference")
	switch {
	case iv.Reference == "":
		all = append(all, field.Required(rp, ""))
	case strings.TrimSpace(iv.Reference) != iv.Reference:
		all = append(all, field.Invalid(rp, iv.Reference, "must not have leading or trailing whitespace"))
	default:
		if _, err := reference.ParseNormalizedNamed(iv.Reference); err != nil {
			all = append(all, field.Invalid(rp, iv.Reference, err.Error()))
		}
	}
	if !slices.Contains(pullPolicies, iv.PullPolicy) {
		all = append(all, field.NotSupported(p.Child("pullPolicy"), iv.PullPolicy, pullPolicies))
	}
	return all
}
