package spec

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// defaultPath is containerd's default PATH (oci.WithDefaultPathEnv).
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Env returns the container's process environment as containerd's CRI
// plugin assembles it: the default PATH, HOSTNAME, the image's env, then the
// container's resolved env (ResolveEnv). A later entry replaces an earlier
// one of the same name in place.
func Env(p Pod, c Container) ([]string, error) {
	env, err := ResolveEnv(p, c.Container)
	if err != nil {
		return nil, err
	}
	return processEnv(p, c.Image, env), nil
}

func processEnv(p Pod, img ocispec.ImageConfig, env []corev1.EnvVar) []string {
	out := []string{defaultPath}
	if h := podHostname(p); h != "" {
		out = mergeEnv(out, "HOSTNAME="+h)
	}
	out = mergeEnv(out, img.Env...)
	for _, e := range env {
		out = mergeEnv(out, e.Name+"="+e.Value)
	}
	return out
}

// podHostname is the hostname the container sees: the host's, or the
// kernel hostname (the FQDN with setHostnameAsFQDN; one too long never
// gets here, its sandbox was refused).
func podHostname(p Pod) string {
	if p.Pod.Spec.HostNetwork {
		return p.Host.Hostname
	}
	if h, err := KernelHostname(p.Pod, p.Host.ClusterDomain); err == nil {
		return h
	}
	return Hostname(p.Pod)
}

// mergeEnv replaces or appends KEY=VALUE entries (containerd's
// replaceOrAppendEnvValues without its unset form).
func mergeEnv(env []string, add ...string) []string {
	for _, kv := range add {
		key, _, _ := strings.Cut(kv, "=")
		replaced := false
		for i, e := range env {
			if k, _, _ := strings.Cut(e, "="); k == key {
				env[i], replaced = kv, true
				break
			}
		}
		if !replaced {
			env = append(env, kv)
		}
	}
	return env
}

// ResolveEnv returns the container's own environment as the kubelet
// computes it (makeEnvironmentVariables): envFrom (ConfigMaps and Secrets,
// keys sorted, with the prefix; keys that are not valid variable names are
// skipped with an InvalidEnvironmentVariableNames warning), then env in
// order; plain values expand $(VAR) against the variables defined before
// them; valueFrom is resolved from the pod (fieldRef, resourceFieldRef) or
// from a ConfigMap or Secret (configMapKeyRef, secretKeyRef). Names keep
// their first position; a later definition replaces the value. A missing
// ConfigMap, Secret or key is an error unless the reference is optional.
func ResolveEnv(p Pod, c *corev1.Container) ([]corev1.EnvVar, error) {
	var out []corev1.EnvVar
	index := map[string]int{}
	vars := map[string]string{}
	set := func(name, value string) {
		vars[name] = value
		if i, ok := index[name]; ok {
			out[i].Value = value
			return
		}
		index[name] = len(out)
		out = append(out, corev1.EnvVar{Name: name, Value: value})
	}
	if links := p.Pod.Spec.EnableServiceLinks; p.ServiceEnvFinal || links == nil || *links {
		for _, e := range p.ServiceEnv {
			set(e.Name, e.Value)
		}
	}
	for i, from := range c.EnvFrom {
		kv, err := envFromValues(p, from)
		if err != nil {
			return nil, fmt.Errorf("envFrom[%d]: %w", i, err)
		}
		for _, e := range kv {
			set(e.Name, e.Value)
		}
	}
	for _, e := range c.Env {
		value := e.Value
		switch {
		case e.ValueFrom != nil:
			v, skip, err := resolveValueFrom(p, c, e.ValueFrom)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			if skip {
				continue
			}
			value = v
		case value != "":
			value = Expand(value, lookupIn(vars))
		}
		set(e.Name, value)
	}
	return out, nil
}

// envFromValues returns the variables of one envFrom source, sorted by
// name; an optional source that does not exist gives none.
func envFromValues(p Pod, from corev1.EnvFromSource) ([]corev1.EnvVar, error) {
	ns := p.Pod.Namespace
	data := map[string]string{}
	var kind, name string
	switch {
	case from.ConfigMapRef != nil:
		kind, name = "configMap", from.ConfigMapRef.Name
		cm, ok := p.data().ConfigMap(ns, name)
		if !ok {
			if isTrue(from.ConfigMapRef.Optional) {
				return nil, nil
			}
			return nil, fmt.Errorf("configmap %q not found", name)
		}
		maps.Copy(data, cm.Data)
	case from.SecretRef != nil:
		kind, name = "secret", from.SecretRef.Name
		sec, ok := p.data().Secret(ns, name)
		if !ok {
			if isTrue(from.SecretRef.Optional) {
				return nil, nil
			}
			return nil, fmt.Errorf("secret %q not found", name)
		}
		for k, v := range sec.Data {
			data[k] = string(v)
		}
	default:
		return nil, nil
	}
	var out []corev1.EnvVar
	var invalid []string
	for _, k := range slices.Sorted(maps.Keys(data)) {
		key := from.Prefix + k
		if len(validation.IsRelaxedEnvVarName(key)) > 0 {
			invalid = append(invalid, key)
			continue
		}
		out = append(out, corev1.EnvVar{Name: key, Value: data[k]})
	}
	if len(invalid) > 0 && p.Warn != nil {
		p.Warn("InvalidEnvironmentVariableNames", fmt.Sprintf("Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.",
			strings.Join(invalid, ", "), kind, ns, name))
	}
	return out, nil
}

// resolveValueFrom returns the value of a valueFrom source, or skip for an
// optional source that cannot be resolved.
func resolveValueFrom(p Pod, c *corev1.Container, from *corev1.EnvVarSource) (string, bool, error) {
	switch {
	case from.FieldRef != nil:
		v, err := fieldValue(p, from.FieldRef.FieldPath)
		return v, false, err
	case from.ResourceFieldRef != nil:
		v, err := resourceValue(p, c, from.ResourceFieldRef)
		return v, false, err
	case from.ConfigMapKeyRef != nil:
		return configMapKey(p, from.ConfigMapKeyRef)
	case from.SecretKeyRef != nil:
		return secretKey(p, from.SecretKeyRef)
	}
	return "", false, fmt.Errorf("unsupported valueFrom source")
}

func configMapKey(p Pod, ref *corev1.ConfigMapKeySelector) (string, bool, error) {
	optional := isTrue(ref.Optional)
	cm, ok := p.data().ConfigMap(p.Pod.Namespace, ref.Name)
	if !ok {
		if optional {
			return "", true, nil
		}
		return "", false, fmt.Errorf("configmap %q not found", ref.Name)
	}
	v, ok := cm.Data[ref.Key]
	if !ok {
		if optional {
			return "", true, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, p.Pod.Namespace, ref.Name)
	}
	return v, false, nil
}

func secretKey(p Pod, ref *corev1.SecretKeySelector) (string, bool, error) {
	optional := isTrue(ref.Optional)
	sec, ok := p.data().Secret(p.Pod.Namespace, ref.Name)
	if !ok {
		if optional {
			return "", true, nil
		}
		return "", false, fmt.Errorf("secret %q not found", ref.Name)
	}
	v, ok := sec.Data[ref.Key]
	if !ok {
		if optional {
			return "", true, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, p.Pod.Namespace, ref.Name)
	}
	return string(v), false, nil
}

// noData is the DataSource of a Pod without one: nothing exists.
type noData struct{}

func (noData) ConfigMap(string, string) (*corev1.ConfigMap, bool) { return nil, false }
func (noData) Secret(string, string) (*corev1.Secret, bool)       { return nil, false }

func (p Pod) data() DataSource {
	if p.Data == nil {
		return noData{}
	}
	return p.Data
}

// fieldValue resolves a downward-API fieldRef for an env var.
func fieldValue(p Pod, path string) (string, error) {
	pod := p.Pod
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return p.Host.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return p.HostIP, nil
	case "status.podIP":
		if ips := p.podIPs(); len(ips) > 0 {
			return ips[0], nil
		}
		return "", nil
	case "status.podIPs":
		return strings.Join(p.podIPs(), ","), nil
	}
	for prefix, m := range map[string]map[string]string{
		"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations,
	} {
		if rest, ok := strings.CutPrefix(path, prefix+"['"); ok && strings.HasSuffix(rest, "']") {
			return m[strings.TrimSuffix(rest, "']")], nil
		}
	}
	return "", fmt.Errorf("fieldRef %q is not supported", path)
}

// ResourceValue resolves a resourceFieldRef of pod (downwardAPI volume
// files) with the node's allocatable, as resourceValue.
func ResourceValue(pod *corev1.Pod, allocatable corev1.ResourceList, ref *corev1.ResourceFieldSelector) (string, error) {
	return resourceValue(Pod{Pod: pod, Host: HostLimits{Allocatable: allocatable}}, nil, ref)
}

// resourceValue resolves a resourceFieldRef like the kubelet: a missing or
// zero limit falls back to the node's allocatable (cpu, memory,
// ephemeral-storage; hugepages-<size> stays 0); values are divided by the
// divisor (default 1) and rounded up.
func resourceValue(p Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	target := c
	if ref.ContainerName != "" && (c == nil || ref.ContainerName != c.Name) {
		if target = manifest.FindContainer(&p.Pod.Spec, ref.ContainerName); target == nil {
			return "", fmt.Errorf("resourceFieldRef: no container %q", ref.ContainerName)
		}
	}
	if target == nil {
		return "", fmt.Errorf("resourceFieldRef: containerName is required")
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("resourceFieldRef %q is not supported", ref.Resource)
	}
	list := target.Resources.Requests
	if kind == "limits" {
		list = target.Resources.Limits
	}
	rn := corev1.ResourceName(name)
	q, ok := list[rn]
	if kind == "limits" && (!ok || q.IsZero()) && allocatableFallback(rn) { // MergeContainerResourceLimits: missing or zero
		q = p.Host.Allocatable[rn]
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == string(corev1.ResourceCPU) {
		return strconv.FormatInt(ceilDiv(q.MilliValue(), divisor.MilliValue()), 10), nil
	}
	return strconv.FormatInt(ceilDiv(q.Value(), divisor.Value()), 10), nil
}

// allocatableFallback: the resources whose missing limit the kubelet's
// MergeContainerResourceLimits fills with the node's allocatable; a
// hugepages-<size> limit is 0 when unset.
func allocatableFallback(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	return false
}

func ceilDiv(a, b int64) int64 {
	if b == 0 {
		return 0
	}
	return int64(math.Ceil(float64(a) / float64(b)))
}

func isTrue(b *bool) bool { return b != nil && *b }

// podIPs is status.podIPs as the status shows it: a hostNetwork pod has the
// host's IP (the kubelet's rule), whatever the sandbox reports.
func (p Pod) podIPs() []string {
	if p.Pod.Spec.HostNetwork && p.HostIP != "" {
		return []string{p.HostIP}
	}
	return p.PodIPs
}
