package manifest

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// downwardVolumePaths are the fieldRef paths a downwardAPI volume file may
// hold (Kubernetes' validDownwardAPIFieldPathExpressions for volumes).
var downwardVolumePaths = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}

// validateDownwardVolumes checks the downwardAPI and projected volumes of
// a pod (their resourceFieldRefs name containers).
func validateDownwardVolumes(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	containers := sets.New[string]()
	for _, list := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for _, c := range list {
			containers.Insert(c.Name)
		}
	}
	var all field.ErrorList
	for i := range s.Volumes {
		v := &s.Volumes[i]
		vp := p.Index(i)
		if d := v.DownwardAPI; d != nil {
			dp := vp.Child("downwardAPI")
			all = append(all, validateMode(d.DefaultMode, dp.Child("defaultMode"))...)
			if d.DefaultUser != nil {
				all = append(all, forbidden(dp.Child("defaultUser"), "defaultUser is"))
			}
			all = append(all, validateDownwardItems(d.Items, containers, sets.New[string](), dp.Child("items"))...)
		}
		if pr := v.Projected; pr != nil {
			all = append(all, validateProjected(pr, containers, vp.Child("projected"))...)
		}
	}
	return all
}

func validateDownwardItems(items []corev1.DownwardAPIVolumeFile, containers, paths sets.Set[string], p *field.Path) field.ErrorList {
	var all field.ErrorList
	for i := range items {
		it := &items[i]
		ip := p.Index(i)
		all = append(all, validateItemPath(it.Path, paths, ip.Child("path"))...)
		all = append(all, validateMode(it.Mode, ip.Child("mode"))...)
		if it.User != nil {
			all = append(all, forbidden(ip.Child("user"), "items[].user is"))
		}
		switch {
		case it.FieldRef != nil && it.ResourceFieldRef != nil:
			all = append(all, field.Invalid(ip, "", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		case it.FieldRef != nil:
			fp := ip.Child("fieldRef")
			if it.FieldRef.APIVersion != "v1" {
				all = append(all, field.NotSupported(fp.Child("apiVersion"), it.FieldRef.APIVersion, []string{"v1"}))
			}
			all = append(all, validateFieldPath(it.FieldRef.FieldPath, downwardVolumePaths, fp)...)
		case it.ResourceFieldRef != nil:
			rp := ip.Child("resourceFieldRef")
			ref := it.ResourceFieldRef
			switch {
			case ref.ContainerName == "":
				all = append(all, field.Required(rp.Child("containerName"), ""))
			case !containers.Has(ref.ContainerName):
				all = append(all, field.NotFound(rp.Child("containerName"), ref.ContainerName))
			}
			kind, name, _ := strings.Cut(ref.Resource, ".")
			if (kind != "limits" && kind != "requests") || !downwardResource(corev1.ResourceName(name)) {
				all = append(all, field.Invalid(rp.Child("resource"), ref.Resource,
					"must be limits.<resource> or requests.<resource> for cpu, memory, ephemeral-storage or hugepages-<size>"))
			}
			all = append(all, validateDivisor(ref, rp)...)
		default:
			all = append(all, field.Required(ip, "one of fieldRef and resourceFieldRef is required"))
		}
	}
	return all
}

// validateItemPath checks a volume file path and that it is unique in its
// volume.
func validateItemPath(path string, paths sets.Set[string], p *field.Path) field.ErrorList {
	if path == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	all := validateRelPath(p, path)
	if len(all) == 0 && strings.HasPrefix(path, "..") {
		all = append(all, field.Invalid(p, path, "must not start with '..'"))
	}
	if paths.Has(path) {
		all = append(all, field.Duplicate(p, path))
	}
	paths.Insert(path)
	return all
}

// projectedSources are the projected volume sources podhost fills.
var projectedSources = []string{"configMap", "downwardAPI", "secret"}

func validateProjected(pr *corev1.ProjectedVolumeSource, containers sets.Set[string], p *field.Path) field.ErrorList {
	all := validateMode(pr.DefaultMode, p.Child("defaultMode"))
	if pr.DefaultUser != nil {
		all = append(all, forbidden(p.Child("defaultUser"), "defaultUser is"))
	}
	paths := sets.New[string]()
	for i := range pr.Sources {
		src := &pr.Sources[i]
		sp := p.Child("sources").Index(i)
		set := setFields(src)
		if len(set) != 1 {
			all = append(all, field.Forbidden(sp, "must specify exactly 1 source type"))
		}
		for _, f := range set {
			switch {
			case f == "serviceAccountToken":
				// podhost-cluster hands over the tokens of the pods the
				// cluster binds to the node as secret sources (docs/cluster.md).
				all = append(all, unsupported(sp.Child(f), f, "there is no cluster to issue a token for a pod not from a cluster's API server; supported: "+quoteList(projectedSources)))
			case !slices.Contains(projectedSources, f):
				all = append(all, unsupported(sp.Child(f), f, "supported: "+quoteList(projectedSources)))
			}
		}
		keyItems := func(items []corev1.KeyToPath, ip *field.Path) {
			for j, it := range items {
				if it.Key == "" {
					all = append(all, field.Required(ip.Index(j).Child("key"), ""))
				}
				all = append(all, validateItemPath(it.Path, paths, ip.Index(j).Child("path"))...)
				all = append(all, validateMode(it.Mode, ip.Index(j).Child("mode"))...)
				if it.User != nil {
					all = append(all, forbidden(ip.Index(j).Child("user"), "items[].user is"))
				}
			}
		}
		if cm := src.ConfigMap; cm != nil {
			all = append(all, validateRefName(cm.Name, sp.Child("configMap", "name"))...)
			keyItems(cm.Items, sp.Child("configMap", "items"))
		}
		if sec := src.Secret; sec != nil {
			all = append(all, validateRefName(sec.Name, sp.Child("secret", "name"))...)
			keyItems(sec.Items, sp.Child("secret", "items"))
		}
		if d := src.DownwardAPI; d != nil {
			all = append(all, validateDownwardItems(d.Items, containers, paths, sp.Child("downwardAPI", "items"))...)
		}
	}
	return all
}
