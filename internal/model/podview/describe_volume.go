package podview

import (
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
)

// describeVolumes is kubectl's describeVolumes for the volume types podhost
// runs (the manifest decoder refuses the others).
func describeVolumes(w io.Writer, vols []corev1.Volume) {
	if len(vols) == 0 {
		fmt.Fprintln(w, "Volumes:\t<none>")
		return
	}
	fmt.Fprintln(w, "Volumes:")
	for _, v := range vols {
		fmt.Fprintf(w, "  %s:\n", v.Name)
		switch s := v.VolumeSource; {
		case s.HostPath != nil:
			t := "<none>"
			if s.HostPath.Type != nil {
				t = string(*s.HostPath.Type)
			}
			fmt.Fprintf(w, "    Type:\tHostPath (bare host directory volume)\n    Path:\t%v\n    HostPathType:\t%v\n", s.HostPath.Path, t)
		case s.EmptyDir != nil:
			limit := "<unset>"
			if l := s.EmptyDir.SizeLimit; l != nil && l.Sign() > 0 {
				limit = l.String()
			}
			fmt.Fprintf(w, "    Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n    Medium:\t%v\n    SizeLimit:\t%v\n", s.EmptyDir.Medium, limit)
		case s.Secret != nil:
			fmt.Fprintf(w, "    Type:\tSecret (a volume populated by a Secret)\n    SecretName:\t%v\n    Optional:\t%v\n", s.Secret.SecretName, isTrue(s.Secret.Optional))
		case s.ConfigMap != nil:
			fmt.Fprintf(w, "    Type:\tConfigMap (a volume populated by a ConfigMap)\n    Name:\t%v\n    Optional:\t%v\n", s.ConfigMap.Name, isTrue(s.ConfigMap.Optional))
		case s.DownwardAPI != nil:
			fmt.Fprintln(w, "    Type:\tDownwardAPI (a volume populated by information about the pod)\n    Items:")
			downwardItems(w, s.DownwardAPI.Items)
		case s.Projected != nil:
			describeProjected(w, s.Projected)
		default:
			fmt.Fprintln(w, "  <unknown>")
		}
	}
}

// downwardItems is kubectl's list of a downwardAPI volume's items: "<field
// or resource> -> <path>".
func downwardItems(w io.Writer, items []corev1.DownwardAPIVolumeFile) {
	for _, it := range items {
		if it.FieldRef != nil {
			fmt.Fprintf(w, "      %v -> %v\n", it.FieldRef.FieldPath, it.Path)
		}
		if it.ResourceFieldRef != nil {
			fmt.Fprintf(w, "      %v -> %v\n", it.ResourceFieldRef.Resource, it.Path)
		}
	}
}

// describeProjected is kubectl's printProjectedVolumeSource.
func describeProjected(w io.Writer, p *corev1.ProjectedVolumeSource) {
	fmt.Fprintln(w, "    Type:\tProjected (a volume that contains injected data from multiple sources)")
	for _, src := range p.Sources {
		switch {
		case src.Secret != nil:
			fmt.Fprintf(w, "    SecretName:\t%v\n    Optional:\t%v\n", src.Secret.Name, isTrue(src.Secret.Optional))
		case src.DownwardAPI != nil:
			fmt.Fprintln(w, "    DownwardAPI:\ttrue")
		case src.ConfigMap != nil:
			fmt.Fprintf(w, "    ConfigMapName:\t%v\n    Optional:\t%v\n", src.ConfigMap.Name, isTrue(src.ConfigMap.Optional))
		case src.ServiceAccountToken != nil && src.ServiceAccountToken.ExpirationSeconds != nil:
			fmt.Fprintf(w, "    TokenExpirationSeconds:\t%d\n", *src.ServiceAccountToken.ExpirationSeconds)
		}
	}
}

func isTrue(b *bool) bool { return b != nil && *b }
