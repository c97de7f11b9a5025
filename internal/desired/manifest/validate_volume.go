package manifest

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// supportedVolumeSources are the volume sources podhost can mount (JSON
// names, sorted).
var supportedVolumeSources = []string{"configMap", "downwardAPI", "emptyDir", "hostPath", "image", "projected", "secret"}

var hostPathTypes = []corev1.HostPathType{
	corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory,
	corev1.HostPathFileOrCreate, corev1.HostPathFile, corev1.HostPathSocket,
	corev1.HostPathCharDev, corev1.HostPathBlockDev,
}

// validateVolumes checks spec.volumes and returns the set of volume names.
func validateVolumes(volumes []corev1.Volume, p *field.Path) (sets.Set[string], field.ErrorList) {
	var all field.ErrorList
	names := sets.New[string]()
	for i := range volumes {
		v := &volumes[i]
		vp := p.Index(i)
		switch {
		case v.Name == "":
			all = append(all, field.Required(vp.Child("name"), ""))
		case names.Has(v.Name):
			all = append(all, field.Duplicate(vp.Child("name"), v.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(v.Name) {
				all = append(all, field.Invalid(vp.Child("name"), v.Name, msg))
			}
		}
		names.Insert(v.Name)
		all = append(all, validateVolumeSource(&v.VolumeSource, vp)...)
	}
	return names, all
}

func validateVolumeSource(vs *corev1.VolumeSource, p *field.Path) field.ErrorList {
	var all field.ErrorList
	sources := setFields(vs)
	if len(sources) > 1 {
		all = append(all, field.Forbidden(p, "may not specify more than 1 volume type"))
	}
	for _, s := range sources {
		if !slices.Contains(supportedVolumeSources, s) {
			all = append(all, unsupported(p.Child(s), s, "supported: "+quoteList(supportedVolumeSources)))
		}
	}
	if vs.HostPath != nil {
		all = append(all, validateHostPath(vs.HostPath, p.Child("hostPath"))...)
	}
	if vs.EmptyDir != nil {
		all = append(all, validateEmptyDir(vs.EmptyDir, p.Child("emptyDir"))...)
	}
	if vs.Image != nil {
		all = append(all, validateImageVolume(vs.Image, p.Child("image"))...)
	}
	if cm := vs.ConfigMap; cm != nil {
		cp := p.Child("configMap")
		all = append(all, validateRefName(cm.Name, cp.Child("name"))...)
		all = append(all, validateDataVolume(cm.Items, cm.DefaultMode, cp)...)
		if cm.DefaultUser != nil {
			all = append(all, forbidden(cp.Child("defaultUser"), "defaultUser is"))
		}
	}
	if sv := vs.Secret; sv != nil {
		sp := p.Child("secret")
		all = append(all, validateRefName(sv.SecretName, sp.Child("secretName"))...)
		all = append(all, validateDataVolume(sv.Items, sv.DefaultMode, sp)...)
		if sv.DefaultUser != nil {
			all = append(all, forbidden(sp.Child("defaultUser"), "defaultUser is"))
		}
	}
	return all
}

func validateHostPath(hp *corev1.HostPathVolumeSource, p *field.Path) field.ErrorList {
	all := validateAbsPath(p.Child("path"), hp.Path)
	if hp.Type != nil && !slices.Contains(hostPathTypes, *hp.Type) {
		all = append(all, field.NotSupported(p.Child("type"), *hp.Type, hostPathTypes))
	}
	return all
}

func validateEmptyDir(ed *corev1.EmptyDirVolumeSource, p *field.Path) field.ErrorList {
	var all field.ErrorList
	switch ed.Medium {
	case corev1.StorageMediumDefault, corev1.StorageMediumMemory:
	case corev1.StorageMediumHugePages:
		all = append(all, unsupported(p.Child("medium"), string(ed.Medium), `supported: "", "Memory"`))
	default:
		all = append(all, field.NotSupported(p.Child("medium"), ed.Medium,
			[]corev1.StorageMedium{corev1.StorageMediumDefault, corev1.StorageMediumMemory}))
	}
	// On disk the eviction manager enforces sizeLimit by evicting the pod,
	// as the kubelet; a tmpfs gets it as its size.
	if ed.SizeLimit != nil && ed.SizeLimit.Sign() < 0 {
		all = append(all, field.Invalid(p.Child("sizeLimit"), ed.SizeLimit.String(), "must be greater than or equal to 0"))
	}
	if ed.Mode != nil {
		all = append(all, forbidden(p.Child("mode"), "emptyDir mode is"))
	}
	return all
}

var (
	propagationModes = []corev1.MountPropagationMode{
		corev1.MountPropagationNone, corev1.MountPropagationHostToContainer, corev1.MountPropagationBidirectional,
	}
	recursiveReadOnlyModes = []corev1.RecursiveReadOnlyMode{
		corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyIfPossible, corev1.RecursiveReadOnlyEnabled,
	}
)

// validateMounts checks a container's volumeMounts (and volumeDevices,
// which podhost does not support: there are no block volumes).
func validateMounts(c *corev1.Container, volumes sets.Set[string], p *field.Path) field.ErrorList {
	var all field.ErrorList
	paths := sets.New[string]()
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		mp := p.Child("volumeMounts").Index(i)
		switch {
		case m.Name == "":
			all = append(all, field.Required(mp.Child("name"), ""))
		case !volumes.Has(m.Name):
			all = append(all, field.NotFound(mp.Child("name"), m.Name))
		}
		all = append(all, validateAbsPath(mp.Child("mountPath"), m.MountPath)...)
		if m.MountPath != "" && paths.Has(m.MountPath) {
			all = append(all, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		all = append(all, validateRelPath(mp.Child("subPath"), m.SubPath)...)
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				all = append(all, field.Invalid(mp.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			all = append(all, validateRelPath(mp.Child("subPathExpr"), m.SubPathExpr)...)
		}
		all = append(all, validateMountModes(c, m, mp)...)
	}
	if len(c.VolumeDevices) > 0 {
		all = append(all, forbidden(p.Child("volumeDevices"), "block volume devices are"))
	}
	return all
}

func validateMountModes(c *corev1.Container, m *corev1.VolumeMount, p *field.Path) field.ErrorList {
	var all field.ErrorList
	if mode := m.MountPropagation; mode != nil {
		switch {
		case !slices.Contains(propagationModes, *mode):
			all = append(all, field.NotSupported(p.Child("mountPropagation"), *mode, propagationModes))
		case *mode == corev1.MountPropagationBidirectional && !isPrivileged(c):
			all = append(all, field.Forbidden(p.Child("mountPropagation"),
				"Bidirectional mount propagation is available only to privileged containers"))
		}
	}
	all = append(all, validateRecursiveReadOnly(m, p.Child("recursiveReadOnly"))...)
	if len(m.BindMountOptions) > 0 {
		all = append(all, forbidden(p.Child("bindMountOptions"), "bindMountOptions are"))
	}
	return all
}

// validateRecursiveReadOnly is Kubernetes' validateMountRecursiveReadOnly:
// IfPossible and Enabled need readOnly and no propagation. Whether the
// runtime supports recursive read-only mounts is the spec builder's check
// (Enabled without it: CreateContainerConfigError, as the kubelet's).
func validateRecursiveReadOnly(m *corev1.VolumeMount, p *field.Path) field.ErrorList {
	mode := m.RecursiveReadOnly
	if mode == nil || *mode == corev1.RecursiveReadOnlyDisabled {
		return nil
	}
	if !slices.Contains(recursiveReadOnlyModes, *mode) {
		return field.ErrorList{field.NotSupported(p, *mode, recursiveReadOnlyModes)}
	}
	var all field.ErrorList
	if !m.ReadOnly {
		all = append(all, field.Forbidden(p, "may only be specified when readOnly is true"))
	}
	if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
		all = append(all, field.Forbidden(p, "may only be specified when mountPropagation is None or not specified"))
	}
	return all
}

func isPrivileged(c *corev1.Container) bool {
	return c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
}

// validateDataVolume checks the items and modes of a configMap or secret
// volume, as Kubernetes' validateKeyToPath. Two items may name the same
// path, as the API allows for these volumes (validateConfigMapVolumeSource,
// validateSecretVolumeSource): the later one wins, as in the kubelet's
// MakePayload. Projected sources refuse it, as the API does.
func validateDataVolume(items []corev1.KeyToPath, defaultMode *int32, p *field.Path) field.ErrorList {
	all := validateMode(defaultMode, p.Child("defaultMode"))
	for i, it := range items {
		ip := p.Child("items").Index(i)
		if it.Key == "" {
			all = append(all, field.Required(ip.Child("key"), ""))
		}
		if it.Path == "" {
			all = append(all, field.Required(ip.Child("path"), ""))
		} else {
			pathErrs := validateRelPath(ip.Child("path"), it.Path)
			all = append(all, pathErrs...)
			if len(pathErrs) == 0 && strings.HasPrefix(it.Path, "..") {
				all = append(all, field.Invalid(ip.Child("path"), it.Path, "must not start with '..'"))
			}
		}
		all = append(all, validateMode(it.Mode, ip.Child("mode"))...)
		if it.User != nil {
			all = append(all, forbidden(ip.Child("user"), "items[].user is"))
		}
	}
	return all
}

func validateMode(mode *int32, p *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0o777 || *mode < 0) {
		return field.ErrorList{field.Invalid(p, *mode, "must be a number between 0 and 0777 (octal), both inclusive")}
	}
	return nil
}
