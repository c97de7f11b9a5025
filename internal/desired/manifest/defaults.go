package manifest

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Defaults, as the API server applies them (pkg/apis/core/v1/defaults.go)
// before the kubelet sees a static pod. Only fields podhost reads or shows
// are defaulted; enableServiceLinks is left alone (there are no services).
const (
	defaultGracePeriod          int64 = 30
	defaultTerminationMessage         = "/dev/termination-log"
	defaultProbeTimeoutSeconds  int32 = 1
	defaultProbePeriodSeconds   int32 = 10
	defaultProbeSuccess         int32 = 1
	defaultProbeFailure         int32 = 3
	defaultHTTPGetPath                = "/"
	defaultFieldRefAPIVersion         = "v1"
	defaultNamespace                  = metav1.NamespaceDefault
	defaultSchedulerName              = corev1.DefaultSchedulerName
	defaultRestartPolicy              = corev1.RestartPolicyAlways
	defaultTerminationMsgPolicy       = corev1.TerminationMessageReadFile
)

func setDefaults(pod *corev1.Pod) {
	if pod.Namespace == "" {
		pod.Namespace = defaultNamespace
	}
	s := &pod.Spec
	if s.RestartPolicy == "" {
		s.RestartPolicy = defaultRestartPolicy
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr(defaultGracePeriod)
	}
	if s.DNSPolicy == "" {
		// Kubernetes' default. podhost has no cluster DNS, so when the
		// sandbox writes resolv.conf, ClusterFirst behaves like Default
		// (the host's resolver configuration).
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.SchedulerName == "" {
		s.SchedulerName = defaultSchedulerName
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	for i := range s.Volumes {
		defaultVolume(&s.Volumes[i])
	}
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i], s.HostNetwork)
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i], s.HostNetwork)
	}
}

// defaultVolume: a volume without a source is an emptyDir (as in
// Kubernetes); a hostPath without a type gets the "" (unchecked) type.
func defaultVolume(v *corev1.Volume) {
	if setFields(&v.VolumeSource) == nil {
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if v.HostPath != nil && v.HostPath.Type == nil {
		v.HostPath.Type = ptr(corev1.HostPathUnset)
	}
	if v.Image != nil && v.Image.PullPolicy == "" && v.Image.Reference != "" { // SetDefaults_ImageVolumeSource
		v.Image.PullPolicy = defaultPullPolicy(v.Image.Reference)
	}
	defaultDownward := func(items []corev1.DownwardAPIVolumeFile) {
		for i := range items {
			if f := items[i].FieldRef; f != nil && f.APIVersion == "" {
				f.APIVersion = defaultFieldRefAPIVersion
			}
		}
	}
	if v.DownwardAPI != nil {
		defaultDownward(v.DownwardAPI.Items)
	}
	if v.Projected != nil {
		for _, src := range v.Projected.Sources {
			if src.DownwardAPI != nil {
				defaultDownward(src.DownwardAPI.Items)
			}
		}
	}
}

func defaultContainer(c *corev1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" && c.Image != "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = defaultTerminationMessage
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = defaultTerminationMsgPolicy
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = defaultFieldRefAPIVersion
		}
	}
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if c.Lifecycle != nil {
		defaultHandler(c.Lifecycle.PostStart)
		defaultHandler(c.Lifecycle.PreStop)
	}
	defaultResources(&c.Resources)
}

// defaultPullPolicy: Always for ":latest" and untagged images, IfNotPresent
// otherwise. A digest pins the content, so any image with a digest is
// IfNotPresent (Kubernetes would say Always for "name:latest@sha256:...").
func defaultPullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	name := image[strings.LastIndex(image, "/")+1:]
	_, tag, tagged := strings.Cut(name, ":")
	if !tagged || tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = defaultProbeTimeoutSeconds
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = defaultProbePeriodSeconds
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = defaultProbeSuccess
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = defaultProbeFailure
	}
	defaultHTTPGet(p.HTTPGet)
}

func defaultHandler(h *corev1.LifecycleHandler) {
	if h != nil {
		defaultHTTPGet(h.HTTPGet)
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = defaultHTTPGetPath
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

// defaultResources: a resource with a limit and no request requests its
// limit (Kubernetes does this per resource name).
func defaultResources(r *corev1.ResourceRequirements) {
	if len(r.Limits) == 0 {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

// setFields returns the JSON names of the non-nil pointer fields of the
// struct structPtr points to: the sources set in a VolumeSource, the
// handlers set in a ProbeHandler, ... Reflection counts fields added to
// k8s.io/api later too.
func setFields(structPtr any) []string {
	var names []string
	v := reflect.ValueOf(structPtr).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			names = append(names, name)
		}
	}
	return names
}

func ptr[T any](v T) *T { return &v }

// intOrStringPort returns the port number of an int-or-string port, or 0
// for a named port.
func intOrStringPort(p intstr.IntOrString) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	return 0
}
