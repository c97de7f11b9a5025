package manifest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestDefaults(t *testing.T) {
	pod, err := decodePod(t, func(p *corev1.Pod) {
		c0(p).ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
		c0(p).Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
		c0(p).Env = []corev1.EnvVar{{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 9}}}}
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "bare"})
	})
	if err != nil {
		t.Fatal(err)
	}
	s := pod.Spec
	checks := []struct {
		name      string
		got, want any
	}{
		{"namespace", pod.Namespace, "default"},
		{"restartPolicy", s.RestartPolicy, corev1.RestartPolicyAlways},
		{"terminationGracePeriodSeconds", *s.TerminationGracePeriodSeconds, int64(30)},
		{"dnsPolicy", s.DNSPolicy, corev1.DNSClusterFirst},
		{"schedulerName", s.SchedulerName, "default-scheduler"},
		{"securityContext", equality.Semantic.DeepEqual(*s.SecurityContext, corev1.PodSecurityContext{}), true},
		{"enableServiceLinks untouched", s.EnableServiceLinks == nil, true},
		{"imagePullPolicy tagged", s.Containers[0].ImagePullPolicy, corev1.PullIfNotPresent},
		{"imagePullPolicy init untagged", s.InitContainers[0].ImagePullPolicy, corev1.PullAlways},
		{"terminationMessagePath", s.Containers[0].TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", s.Containers[0].TerminationMessagePolicy, corev1.TerminationMessageReadFile},
		{"init terminationMessagePath", s.InitContainers[0].TerminationMessagePath, "/dev/termination-log"},
		{"port protocol", s.Containers[0].Ports[0].Protocol, corev1.ProtocolTCP},
		{"init port protocol", s.InitContainers[0].Ports[0].Protocol, corev1.ProtocolTCP},
		{"hostPort stays 0 without hostNetwork", s.Containers[0].Ports[0].HostPort, int32(0)},
		{"fieldRef apiVersion", s.Containers[0].Env[0].ValueFrom.FieldRef.APIVersion, "v1"},
		{"probe timeout", s.Containers[0].ReadinessProbe.TimeoutSeconds, int32(1)},
		{"probe period", s.Containers[0].ReadinessProbe.PeriodSeconds, int32(10)},
		{"probe success", s.Containers[0].ReadinessProbe.SuccessThreshold, int32(1)},
		{"probe failure", s.Containers[0].ReadinessProbe.FailureThreshold, int32(3)},
		{"probe path", s.Containers[0].ReadinessProbe.HTTPGet.Path, "/"},
		{"probe scheme", s.Containers[0].ReadinessProbe.HTTPGet.Scheme, corev1.URISchemeHTTP},
		{"preStop path", s.Containers[0].Lifecycle.PreStop.HTTPGet.Path, "/"},
		{"hostPath type", *s.Volumes[0].HostPath.Type, corev1.HostPathUnset},
		{"volume without source is emptyDir", s.Volumes[2].EmptyDir != nil, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestDefaultsKeepExplicitValues(t *testing.T) {
	pod, err := decodePod(t, func(p *corev1.Pod) {
		p.Namespace = "prod"
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Spec.TerminationGracePeriodSeconds = ptrTo(int64(0))
		p.Spec.DNSPolicy = corev1.DNSDefault
		c0(p).ImagePullPolicy = corev1.PullNever
		c0(p).TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
		c0(p).Ports[0].Protocol = corev1.ProtocolUDP
	})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Namespace != "prod" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever ||
		*pod.Spec.TerminationGracePeriodSeconds != 0 || pod.Spec.DNSPolicy != corev1.DNSDefault ||
		c0(pod).ImagePullPolicy != corev1.PullNever ||
		c0(pod).TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError ||
		c0(pod).Ports[0].Protocol != corev1.ProtocolUDP {
		t.Errorf("explicit values were overwritten: %+v", pod.Spec)
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	cases := map[string]corev1.PullPolicy{
		"nginx":                             corev1.PullAlways,
		"nginx:latest":                      corev1.PullAlways,
		"docker.io/library/nginx":           corev1.PullAlways,
		"localhost:5000/app":                corev1.PullAlways,
		"localhost:5000/app:latest":         corev1.PullAlways,
		"localhost:5000/app:1.0":            corev1.PullIfNotPresent,
		"nginx:1.27":                        corev1.PullIfNotPresent,
		"nginx@sha256:" + sha256Zero:        corev1.PullIfNotPresent,
		"nginx:latest@sha256:" + sha256Zero: corev1.PullIfNotPresent,
	}
	for image, want := range cases {
		if got := defaultPullPolicy(image); got != want {
			t.Errorf("defaultPullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
}

const sha256Zero = "0000000000000000000000000000000000000000000000000000000000000000"

func TestDefaultResources(t *testing.T) {
	pod, err := decodePod(t, func(p *corev1.Pod) {
		c0(p).Resources = corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{"cpu": q("2"), "memory": q("1Gi")},
			Requests: corev1.ResourceList{"cpu": q("500m")},
		}
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"memory": q("64Mi")}}}}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.ResourceList{"cpu": q("500m"), "memory": q("1Gi")}
	if !equality.Semantic.DeepEqual(c0(pod).Resources.Requests, want) {
		t.Errorf("requests = %v, want %v", c0(pod).Resources.Requests, want)
	}
	wantInit := corev1.ResourceList{"memory": q("64Mi")}
	if got := pod.Spec.InitContainers[0].Resources.Requests; !equality.Semantic.DeepEqual(got, wantInit) {
		t.Errorf("init requests = %v, want %v", got, wantInit)
	}
}

func TestDefaultHostNetworkPorts(t *testing.T) {
	pod, err := decodePod(t, func(p *corev1.Pod) { p.Spec.HostNetwork = true })
	if err != nil {
		t.Fatal(err)
	}
	if got := c0(pod).Ports[0].HostPort; got != 80 {
		t.Errorf("hostPort = %d, want 80 (= containerPort with hostNetwork)", got)
	}
}
