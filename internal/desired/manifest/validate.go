package manifest

import (
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// Validation follows Kubernetes' ValidatePod (pkg/apis/core/validation) for
// everything podhost runs, with the same messages where it can. Labels and
// annotations are checked as the API server checks every object's
// (apimachinery's ValidateLabels and ValidateAnnotations: keys, values,
// 256 KiB of annotations in all). Fields that only matter to a cluster
// (nodeName, nodeSelector, affinity, tolerations, priority,
// serviceAccountName, ...) are ignored.
// Features podhost cannot honour are rejected rather than silently ignored,
// because ignoring them would change what runs: ephemeral containers,
// volume types other than hostPath, emptyDir, configMap, secret,
// downwardAPI and projected,
// container restartPolicy other than Always on an init container (a native
// sidecar), pod-level resources,
// runtime classes, a shared PID namespace.

const notSupported = "not supported by podhost"

// unsupported reports a value podhost does not support, e.g.
// `spec.volumes[2].nfs: Unsupported value: "nfs": not supported
// by podhost (supported: configMap, downwardAPI, emptyDir, hostPath, image, projected, secret)`.
func unsupported(p *field.Path, value, hint string) *field.Error {
	detail := notSupported
	if hint != "" {
		detail += " (" + hint + ")"
	}
	return &field.Error{Type: field.ErrorTypeNotSupported, Field: p.String(), BadValue: value, Detail: detail}
}

// forbidden reports a field podhost does not support.
func forbidden(p *field.Path, what string) *field.Error {
	return field.Forbidden(p, what+" "+notSupported)
}

func validatePod(pod *corev1.Pod) errs {
	var all field.ErrorList
	all = append(all, validateMeta(&pod.ObjectMeta, field.NewPath("metadata"))...)
	all = append(all, validateSpec(&pod.Spec, field.NewPath("spec"))...)
	all = append(all, validateAppArmorAnnotations(pod, field.NewPath("metadata", "annotations"))...)
	var e errs
	e.addField(all)
	return e
}

var uidRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?$`)

func validateMeta(m *metav1.ObjectMeta, p *field.Path) field.ErrorList {
	var all field.ErrorList
	switch {
	case m.Name == "" && m.GenerateName != "":
		all = append(all, field.Required(p.Child("name"), "podhost needs a fixed name (generateName is "+notSupported+")"))
	case m.Name == "":
		all = append(all, field.Required(p.Child("name"), "name is required"))
	default:
		for _, msg := range validation.IsDNS1123Subdomain(m.Name) {
			all = append(all, field.Invalid(p.Child("name"), m.Name, msg))
		}
	}
	for _, msg := range validation.IsDNS1123Label(m.Namespace) {
		all = append(all, field.Invalid(p.Child("namespace"), m.Namespace, msg))
	}
	if m.UID != "" && !uidRE.MatchString(string(m.UID)) {
		all = append(all, field.Invalid(p.Child("uid"), string(m.UID),
			"must be 1-64 letters, digits or '-', starting and ending with a letter or digit (usually a UUID)"))
	}
	// Set by a cluster's API server when a delete is requested: a manifest
	// carrying them would read as "being deleted" (the kubelet kills such a
	// pod). podhost deletes a pod when its file goes away, never otherwise.
	if m.DeletionTimestamp != nil {
		all = append(all, forbidden(p.Child("deletionTimestamp"), "metadata.deletionTimestamp (delete the manifest file instead) is"))
	}
	if m.DeletionGracePeriodSeconds != nil {
		all = append(all, forbidden(p.Child("deletionGracePeriodSeconds"), "metadata.deletionGracePeriodSeconds (set terminationGracePeriodSeconds) is"))
	}
	all = append(all, validateLabelsAndAnnotations(m, p)...)
	if v, ok := m.Annotations[wellknown.AnnotationRollbackAfter]; ok {
		if _, err := wellknown.ParseRollbackAfter(v); err != nil {
			all = append(all, field.Invalid(p.Child("annotations").Key(wellknown.AnnotationRollbackAfter), v, err.Error()))
		}
	}
	if len(all) == 0 {
		all = append(all, validateNameLength(m, p)...)
	}
	return all
}

// validateLabelsAndAnnotations checks m's labels and annotations as the API
// server checks every object's metadata (ValidateObjectMetaAccessor).
func validateLabelsAndAnnotations(m *metav1.ObjectMeta, p *field.Path) field.ErrorList {
	all := metav1validation.ValidateLabels(m.Labels, p.Child("labels"))
	return append(all, apivalidation.ValidateAnnotations(m.Annotations, p.Child("annotations"))...)
}

// maxDirName is the longest file name Linux allows (NAME_MAX).
const maxDirName = 255

// validateNameLength keeps the pod's log directory name,
// "<namespace>_<name>_<uid>" (as the kubelet names it), within NAME_MAX.
// Kubernetes allows 253-character names, which would not fit.
func validateNameLength(m *metav1.ObjectMeta, p *field.Path) field.ErrorList {
	uidLen := len(m.UID)
	if uidLen == 0 {
		uidLen = len("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx") // PodUID
	}
	maxName := maxDirName - len(m.Namespace) - uidLen - 2
	if len(m.Name) <= maxName {
		return nil
	}
	return field.ErrorList{{Type: field.ErrorTypeTooLong, Field: p.Child("name").String(),
		Detail: fmt.Sprintf("may not be more than %d bytes in this namespace: the pod log directory <namespace>_<name>_<uid> must fit in %d bytes",
			max(maxName, 0), maxDirName)}}
}

func validateSpec(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var all field.ErrorList
	volumes, errs := validateVolumes(s.Volumes, p.Child("volumes"))
	all = append(all, errs...)
	all = append(all, validateContainers(s, volumes, p)...)
	all = append(all, validateDownwardVolumes(s, p.Child("volumes"))...)
	all = append(all, validatePolicies(s, p)...)
	all = append(all, validateDNS(s, p)...)
	all = append(all, validateUnsupported(s, p)...)
	all = append(all, validateHostUsers(s, p)...)
	all = append(all, validatePodSecurityContext(s, p.Child("securityContext"))...)
	return all
}

var restartPolicies = []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}

func validatePolicies(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var all field.ErrorList
	if !sets.New(restartPolicies...).Has(s.RestartPolicy) {
		all = append(all, field.NotSupported(p.Child("restartPolicy"), s.RestartPolicy, restartPolicies))
	}
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		all = append(all, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	if d := s.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		all = append(all, field.Invalid(p.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	return all
}

var dnsPolicies = []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}

func validateDNS(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var all field.ErrorList
	if !sets.New(dnsPolicies...).Has(s.DNSPolicy) {
		all = append(all, field.NotSupported(p.Child("dnsPolicy"), s.DNSPolicy, dnsPolicies))
	}
	for _, f := range []struct {
		name, value string
	}{{"hostname", s.Hostname}, {"subdomain", s.Subdomain}} {
		if f.value == "" {
			continue
		}
		for _, msg := range validation.IsDNS1123Label(f.value) {
			all = append(all, field.Invalid(p.Child(f.name), f.value, msg))
		}
	}
	cfg := p.Child("dnsConfig")
	if s.DNSPolicy == corev1.DNSNone && (s.DNSConfig == nil || len(s.DNSConfig.Nameservers) == 0) {
		all = append(all, field.Required(cfg.Child("nameservers"), "must provide at least one DNS nameserver when dnsPolicy is None"))
	}
	if s.DNSConfig != nil {
		all = append(all, validateDNSConfig(s.DNSConfig, cfg)...)
	}
	for i, ha := range s.HostAliases {
		hp := p.Child("hostAliases").Index(i)
		if _, err := netip.ParseAddr(ha.IP); err != nil {
			all = append(all, field.Invalid(hp.Child("ip"), ha.IP, "must be a valid IP address"))
		}
		for j, h := range ha.Hostnames {
			for _, msg := range validation.IsDNS1123Subdomain(h) {
				all = append(all, field.Invalid(hp.Child("hostnames").Index(j), h, msg))
			}
		}
	}
	return all
}

// maxDNSSearchListChars is the API's MaxDNSSearchListChars.
const maxDNSSearchListChars = 2048

// validateDNSSearch is the API's check of one dnsConfig search domain with
// RelaxedDNSSearchValidation (GA): a lone "." (no search domain) is fine,
// else, a trailing dot aside, a DNS-1123 subdomain that may hold
// underscores.
func validateDNSSearch(s string, p *field.Path) field.ErrorList {
	if s == "." {
		return nil
	}
	var all field.ErrorList
	for _, msg := range validation.IsDNS1123SubdomainWithUnderscore(strings.TrimSuffix(s, ".")) {
		all = append(all, field.Invalid(p, s, msg))
	}
	return all
}

func validateDNSConfig(c *corev1.PodDNSConfig, p *field.Path) field.ErrorList {
	var all field.ErrorList
	if len(c.Nameservers) > 3 {
		all = append(all, field.Invalid(p.Child("nameservers"), strings.Join(c.Nameservers, ","), "must not have more than 3 nameservers"))
	}
	for i, ns := range c.Nameservers {
		if _, err := netip.ParseAddr(ns); err != nil {
			all = append(all, field.Invalid(p.Child("nameservers").Index(i), ns, "must be a valid IP address"))
		}
	}
	if len(c.Searches) > 32 {
		all = append(all, field.Invalid(p.Child("searches"), len(c.Searches), "must not have more than 32 search paths"))
	}
	if len(strings.Join(c.Searches, " ")) > maxDNSSearchListChars {
		all = append(all, field.Invalid(p.Child("searches"), c.Searches,
			fmt.Sprintf("must not have more than %d characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, s := range c.Searches {
		all = append(all, validateDNSSearch(s, p.Child("searches").Index(i))...)
	}
	for i, o := range c.Options {
		if o.Name == "" {
			all = append(all, field.Required(p.Child("options").Index(i).Child("name"), "must not be empty"))
		}
	}
	return all
}

// validateUnsupported rejects pod features podhost cannot honour.
func validateUnsupported(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var all field.ErrorList
	if len(s.EphemeralContainers) > 0 {
		all = append(all, forbidden(p.Child("ephemeralContainers"), "ephemeral containers are"))
	}
	all = append(all, validateShareProcessNamespace(s, p)...)
	if s.RuntimeClassName != nil && *s.RuntimeClassName != "" {
		all = append(all, unsupported(p.Child("runtimeClassName"), *s.RuntimeClassName, "podhost always uses runc"))
	}
	if len(s.ResourceClaims) > 0 {
		all = append(all, forbidden(p.Child("resourceClaims"), "dynamic resource allocation is"))
	}
	if s.Resources != nil {
		all = append(all, forbidden(p.Child("resources"), "pod-level resources are")) // set them per container
	}
	if s.HostnameOverride != nil {
		all = append(all, forbidden(p.Child("hostnameOverride"), "hostnameOverride is"))
	}
	if len(s.ReadinessGates) > 0 { // nothing on one machine would ever set their conditions
		all = append(all, forbidden(p.Child("readinessGates"), "readinessGates (no controller sets their conditions) are"))
	}
	for i, ref := range s.ImagePullSecrets {
		all = append(all, validateRefName(ref.Name, p.Child("imagePullSecrets").Index(i).Child("name"))...)
	}
	if len(s.Overhead) > 0 { // set by a RuntimeClass; podhost has none
		all = append(all, forbidden(p.Child("overhead"), "overhead (RuntimeClass) is"))
	}
	if s.OS != nil && s.OS.Name != corev1.Linux {
		all = append(all, unsupported(p.Child("os", "name"), string(s.OS.Name), "supported: linux"))
	}
	return all
}

// validatePath checks an absolute path without ".." components.
func validateAbsPath(p *field.Path, path string) field.ErrorList {
	switch {
	case path == "":
		return field.ErrorList{field.Required(p, "")}
	case !strings.HasPrefix(path, "/"):
		return field.ErrorList{field.Invalid(p, path, "must be an absolute path")}
	case hasDotDot(path):
		return field.ErrorList{field.Invalid(p, path, "must not contain '..'")}
	}
	return nil
}

// validateRelPath checks a relative path that stays below its base.
func validateRelPath(p *field.Path, path string) field.ErrorList {
	switch {
	case strings.HasPrefix(path, "/"):
		return field.ErrorList{field.Invalid(p, path, "must be a relative path")}
	case hasDotDot(path):
		return field.ErrorList{field.Invalid(p, path, "must not contain '..'")}
	}
	return nil
}

func hasDotDot(path string) bool {
	for _, part := range strings.Split(path, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// quoteList renders names for a hint: "a, b, c".
func quoteList[T ~string](values []T) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}
