package manifest

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// fieldRefPaths are the downward-API fields an env var may reference (the
// API's validEnvDownwardAPIFieldPathExpressions: no bare metadata.labels or
// metadata.annotations, only a subscripted one).
var fieldRefPaths = []string{
	"metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}

// validateFieldPath checks a downward-API fieldRef path as the API's
// validateObjectFieldSelector: one of paths, or metadata.labels['<key>'] /
// metadata.annotations['<key>'] whose key is a qualified name (an
// annotation's in lower case).
func validateFieldPath(fieldPath string, paths []string, p *field.Path) field.ErrorList {
	base, key, ok := splitSubscript(fieldPath)
	if !ok {
		if !slices.Contains(paths, fieldPath) {
			return field.ErrorList{field.NotSupported(p.Child("fieldPath"), fieldPath, paths)}
		}
		return nil
	}
	switch base {
	case "metadata.annotations":
		key = strings.ToLower(key)
	case "metadata.labels":
	default:
		return field.ErrorList{field.Invalid(p.Child("fieldPath"), fieldPath, "does not support subscript")}
	}
	var all field.ErrorList
	for _, msg := range validation.IsQualifiedName(key) {
		all = append(all, field.Invalid(p, key, msg))
	}
	return all
}

// splitSubscript splits path['key'] as the API's
// fieldpath.SplitMaybeSubscriptedPath.
func splitSubscript(fieldPath string) (base, key string, ok bool) {
	s, found := strings.CutSuffix(fieldPath, "']")
	if !found {
		return fieldPath, "", false
	}
	base, key, found = strings.Cut(s, "['")
	if !found || base == "" {
		return fieldPath, "", false
	}
	return base, key, true
}

// Allowed resourceFieldRef divisors, the API's validateContainerResourceDivisor.
var (
	cpuDivisors  = []string{"1m", "1"}
	byteDivisors = []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
)

// validateDivisor checks a resourceFieldRef divisor as the API's
// validateContainerResourceDivisor: cpu 1m or 1; memory and
// ephemeral-storage a power of 1000 or 1024 from 1 to 1E/1Ei. Unset (0) is
// 1.
func validateDivisor(ref *corev1.ResourceFieldSelector, p *field.Path) field.ErrorList {
	if ref.Divisor.IsZero() {
		return nil
	}
	d := ref.Divisor.String()
	var allowed []string
	var what string
	switch ref.Resource {
	case "limits.cpu", "requests.cpu":
		allowed, what = cpuDivisors, "1m and 1 are supported with the cpu resource"
	case "limits.memory", "requests.memory":
		allowed, what = byteDivisors, strings.Join(byteDivisors, ", ")+" are supported with the memory resource"
	case "limits.ephemeral-storage", "requests.ephemeral-storage":
		allowed, what = byteDivisors, strings.Join(byteDivisors, ", ")+" are supported with the local ephemeral storage resource"
	default:
		if !hugePagesRef(ref.Resource) {
			return nil
		}
		allowed, what = byteDivisors, strings.Join(byteDivisors, ", ")+" are supported with the hugepages resource"
	}
	if slices.Contains(allowed, d) {
		return nil
	}
	return field.ErrorList{field.Invalid(p.Child("divisor"), ref.Resource, "only divisor's values "+what)}
}

// envSources are the env valueFrom sources podhost resolves.
var envSources = []string{"configMapKeyRef", "fieldRef", "resourceFieldRef", "secretKeyRef"}

func validateEnv(c *corev1.Container, ctx *podContext, p *field.Path) field.ErrorList {
	var all field.ErrorList
	for i := range c.Env {
		ev := &c.Env[i]
		ep := p.Child("env").Index(i)
		if ev.Name == "" {
			all = append(all, field.Required(ep.Child("name"), ""))
		}
		for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
			if ev.Name != "" {
				all = append(all, field.Invalid(ep.Child("name"), ev.Name, msg))
			}
		}
		if ev.ValueFrom != nil {
			all = append(all, validateEnvSource(ev, ctx, ep.Child("valueFrom"))...)
		}
	}
	for i := range c.EnvFrom {
		all = append(all, validateEnvFrom(&c.EnvFrom[i], p.Child("envFrom").Index(i))...)
	}
	return all
}

func validateEnvSource(ev *corev1.EnvVar, ctx *podContext, p *field.Path) field.ErrorList {
	var all field.ErrorList
	if ev.Value != "" {
		all = append(all, field.Invalid(p, "", "may not be specified when `value` is not empty"))
	}
	sources := setFields(ev.ValueFrom)
	switch len(sources) {
	case 0:
		return append(all, field.Invalid(p, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case 1:
	default:
		all = append(all, field.Invalid(p, "", "may not have more than one field specified at a time"))
	}
	for _, s := range sources {
		if !slices.Contains(envSources, s) {
			all = append(all, unsupported(p.Child(s), s, "supported: "+quoteList(envSources)))
		}
	}
	if ref := ev.ValueFrom.ConfigMapKeyRef; ref != nil {
		all = append(all, validateKeyRef(ref.Name, ref.Key, p.Child("configMapKeyRef"))...)
	}
	if ref := ev.ValueFrom.SecretKeyRef; ref != nil {
		all = append(all, validateKeyRef(ref.Name, ref.Key, p.Child("secretKeyRef"))...)
	}
	if ref := ev.ValueFrom.FieldRef; ref != nil {
		fp := p.Child("fieldRef")
		if ref.APIVersion != "v1" {
			all = append(all, field.NotSupported(fp.Child("apiVersion"), ref.APIVersion, []string{"v1"}))
		}
		all = append(all, validateFieldPath(ref.FieldPath, fieldRefPaths, fp)...)
	}
	if ref := ev.ValueFrom.ResourceFieldRef; ref != nil {
		rp := p.Child("resourceFieldRef")
		if ref.ContainerName != "" && !ctx.containers.Has(ref.ContainerName) {
			all = append(all, field.NotFound(rp.Child("containerName"), ref.ContainerName))
		}
		kind, name, _ := strings.Cut(ref.Resource, ".")
		if (kind != "limits" && kind != "requests") || !downwardResource(corev1.ResourceName(name)) {
			all = append(all, field.Invalid(rp.Child("resource"), ref.Resource,
				"must be limits.<resource> or requests.<resource> for cpu, memory, ephemeral-storage or hugepages-<size>"))
		}
		all = append(all, validateDivisor(ref, rp)...)
	}
	return all
}

// resourceHint: hugepages-<size> would need a hugetlb limit (and capacity
// read from the host), which podhost does not set.
const resourceHint = "supported: cpu, memory, ephemeral-storage"

// downwardResource: what a resourceFieldRef may name, as the API server
// allows it: a resource podhost supports, or hugepages-<size>, whose value
// is the container's hugepages request or limit (none can be set in
// podhost, so 0, as the kubelet gives for a pod without one).
func downwardResource(name corev1.ResourceName) bool {
	return supportedResource(name) || hugePagesRef("limits."+string(name))
}

// hugePagesRef: ref is limits.hugepages-<size> or requests.hugepages-<size>
// (the API server checks the prefix only, and so does the kubelet's
// IsHugePageResourceName).
func hugePagesRef(ref string) bool {
	kind, name, _ := strings.Cut(ref, ".")
	return (kind == "limits" || kind == "requests") && strings.HasPrefix(name, corev1.ResourceHugePagesPrefix)
}

func supportedResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	return false
}

func validateResources(r *corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	var all field.ErrorList
	// An ephemeral-storage limit is enforced as the kubelet does: the
	// eviction manager (internal/kubelet/eviction) evicts the pod.
	all = append(all, validateResourceList(r.Limits, nil, p.Child("limits"))...)
	all = append(all, validateResourceList(r.Requests, r.Limits, p.Child("requests"))...)
	for _, name := range sortedNames(r.Requests) {
		req := r.Requests[name]
		limit, hasLimit := r.Limits[name]
		rp := p.Child("requests").Key(string(name))
		if hasLimit && req.Cmp(limit) > 0 {
			all = append(all, field.Invalid(rp, req.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	if len(r.Claims) > 0 {
		all = append(all, forbidden(p.Child("claims"), "resource claims are"))
	}
	return all
}

// validateResourceList checks names and signs. Entries equal to their
// entry in skip were defaulted from it and are not reported twice.
func validateResourceList(rl, skip corev1.ResourceList, p *field.Path) field.ErrorList {
	var all field.ErrorList
	for _, name := range sortedNames(rl) {
		q := rl[name]
		if s, ok := skip[name]; ok && s.Cmp(q) == 0 {
			continue
		}
		np := p.Key(string(name))
		if !supportedResource(name) {
			all = append(all, unsupported(np, string(name), resourceHint))
			continue
		}
		if q.Sign() < 0 {
			all = append(all, field.Invalid(np, q.String(), "must be greater than or equal to 0"))
		}
	}
	return all
}

func sortedNames(rl corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(rl))
	for n := range rl {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// validateKeyRef checks a configMapKeyRef or secretKeyRef.
func validateKeyRef(name, key string, p *field.Path) field.ErrorList {
	all := validateRefName(name, p.Child("name"))
	if key == "" {
		return append(all, field.Required(p.Child("key"), ""))
	}
	for _, msg := range validation.IsConfigMapKey(key) {
		all = append(all, field.Invalid(p.Child("key"), key, msg))
	}
	return all
}

// validateRefName checks the name of a referenced ConfigMap or Secret.
func validateRefName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var all field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		all = append(all, field.Invalid(p, name, msg))
	}
	return all
}

// validateEnvFrom checks one envFrom source (exactly one of configMapRef,
// secretRef; a prefix that makes a valid variable name start).
func validateEnvFrom(from *corev1.EnvFromSource, p *field.Path) field.ErrorList {
	var all field.ErrorList
	if from.Prefix != "" {
		for _, msg := range validation.IsRelaxedEnvVarName(from.Prefix) {
			all = append(all, field.Invalid(p.Child("prefix"), from.Prefix, msg))
		}
	}
	switch {
	case from.ConfigMapRef != nil && from.SecretRef != nil:
		all = append(all, field.Invalid(p, "", "may not have more than one field specified at a time"))
	case from.ConfigMapRef != nil:
		all = append(all, validateRefName(from.ConfigMapRef.Name, p.Child("configMapRef", "name"))...)
	case from.SecretRef != nil:
		all = append(all, validateRefName(from.SecretRef.Name, p.Child("secretRef", "name"))...)
	default:
		all = append(all, field.Invalid(p, "", "must specify one of: `configMapRef` or `secretRef`"))
	}
	return all
}
