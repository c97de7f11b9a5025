package manifest

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const dnsSubdomainMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"

const dnsLabelMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"

func c0(p *corev1.Pod) *corev1.Container { return &p.Spec.Containers[0] }

// TestValidateExact pins the complete error text of a representative set.
func TestValidateExact(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   string
	}{
		{"name with slash", func(p *corev1.Pod) { p.Name = "a/b" },
			`web.yaml: metadata.name: Invalid value: "a/b": ` + dnsSubdomainMsg},
		{"name dotdot", func(p *corev1.Pod) { p.Name = ".." },
			`web.yaml: metadata.name: Invalid value: "..": ` + dnsSubdomainMsg},
		{"name uppercase", func(p *corev1.Pod) { p.Name = "Web" },
			`web.yaml: metadata.name: Invalid value: "Web": ` + dnsSubdomainMsg},
		{"name too long for the log directory", func(p *corev1.Pod) { p.Name = strings.Repeat("a", 220) },
			`web.yaml: metadata.name: Too long: may not be more than 210 bytes in this namespace: the pod log directory <namespace>_<name>_<uid> must fit in 255 bytes`},
		{"name empty", func(p *corev1.Pod) { p.Name = "" },
			`web.yaml: metadata.name: Required value: name is required`},
		{"generateName", func(p *corev1.Pod) { p.Name = ""; p.GenerateName = "web-" },
			`web.yaml: metadata.name: Required value: podhost needs a fixed name (generateName is not supported by podhost)`},
		{"deletionTimestamp", func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now },
			`web.yaml: metadata.deletionTimestamp: Forbidden: metadata.deletionTimestamp (delete the manifest file instead) is not supported by podhost`},
		{"deletionGracePeriodSeconds", func(p *corev1.Pod) { g := int64(5); p.DeletionGracePeriodSeconds = &g },
			`web.yaml: metadata.deletionGracePeriodSeconds: Forbidden: metadata.deletionGracePeriodSeconds (set terminationGracePeriodSeconds) is not supported by podhost`},
		{"namespace with dot", func(p *corev1.Pod) { p.Namespace = "a.b" },
			`web.yaml: metadata.namespace: Invalid value: "a.b": must not contain dots`},
		{"namespace uppercase", func(p *corev1.Pod) { p.Namespace = "Prod" },
			`web.yaml: metadata.namespace: Invalid value: "Prod": ` + dnsLabelMsg},
		{"uid with slash", func(p *corev1.Pod) { p.UID = "../x" },
			`web.yaml: metadata.uid: Invalid value: "../x": must be 1-64 letters, digits or '-', starting and ending with a letter or digit (usually a UUID)`},
		{"rollback-after not a duration", func(p *corev1.Pod) { p.Annotations = map[string]string{"podhost.io/rollback-after": "soon"} },
			`web.yaml: metadata.annotations[podhost.io/rollback-after]: Invalid value: "soon": want a duration such as 2m: time: invalid duration "soon"`},
		{"rollback-after negative", func(p *corev1.Pod) { p.Annotations = map[string]string{"podhost.io/rollback-after": "-1m"} },
			`web.yaml: metadata.annotations[podhost.io/rollback-after]: Invalid value: "-1m": must not be negative, got -1m`},
		{"apparmor annotation bad profile", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + c0(p).Name: "my-profile"}
		}, `web.yaml: metadata.annotations[container.apparmor.security.beta.kubernetes.io/` + "web" + `]: Invalid value: "my-profile": invalid AppArmor profile name: "my-profile"`},
		{"apparmor annotation unknown container", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "nope": "runtime/default"}
		}, `web.yaml: metadata.annotations[container.apparmor.security.beta.kubernetes.io/nope]: Invalid value: "nope": container not found`},
		{"apparmor annotation and field differ", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + c0(p).Name: "localhost/a"}
			c0(p).SecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptrTo("b")}}
		}, `web.yaml: metadata.annotations[container.apparmor.security.beta.kubernetes.io/web]: Forbidden: apparmor type in annotation and field must match`},
		{"apparmor annotation and pod field differ", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + c0(p).Name: "unconfined"}
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}}
		}, `web.yaml: metadata.annotations[container.apparmor.security.beta.kubernetes.io/web]: Forbidden: apparmor type in annotation and field must match`},
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil },
			`web.yaml: spec.containers: Required value: a pod needs at least one container`},
		{"image missing", func(p *corev1.Pod) { c0(p).Image = "" },
			`web.yaml: spec.containers[0].image: Required value`},
		{"image whitespace", func(p *corev1.Pod) { c0(p).Image = " nginx" },
			`web.yaml: spec.containers[0].image: Invalid value: " nginx": must not have leading or trailing whitespace`},
		{"image uppercase", func(p *corev1.Pod) { c0(p).Image = "Nginx" },
			`web.yaml: spec.containers[0].image: Invalid value: "Nginx": invalid reference format: repository name (library/Nginx) must be lowercase`},
		{"container name", func(p *corev1.Pod) { c0(p).Name = "Web_1" },
			`web.yaml: spec.containers[0].name: Invalid value: "Web_1": ` + dnsLabelMsg},
		{"duplicate container across init", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "web", Image: "busybox:1"}}
		}, `web.yaml: spec.containers[0].name: Duplicate value: "web"`},
		{"containerPort zero", func(p *corev1.Pod) { c0(p).Ports[0].ContainerPort = 0 },
			`web.yaml: spec.containers[0].ports[0].containerPort: Required value`},
		{"containerPort too big", func(p *corev1.Pod) { c0(p).Ports[0].ContainerPort = 70000 },
			`web.yaml: spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`},
		{"hostPort negative", func(p *corev1.Pod) { c0(p).Ports[0].HostPort = -1 },
			`web.yaml: spec.containers[0].ports[0].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive`},
		{"protocol", func(p *corev1.Pod) { c0(p).Ports[0].Protocol = "ICMP" },
			`web.yaml: spec.containers[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"`},
		{"duplicate port name", func(p *corev1.Pod) {
			c0(p).Ports = append(c0(p).Ports, corev1.ContainerPort{Name: "http", ContainerPort: 81})
		}, `web.yaml: spec.containers[0].ports[1].name: Duplicate value: "http"`},
		{"duplicate host port", func(p *corev1.Pod) {
			c0(p).Ports[0].HostPort = 8080
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Image: "b:1",
				Ports: []corev1.ContainerPort{{ContainerPort: 81, HostPort: 8080}}})
		}, `web.yaml: spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"`},
		{"hostNetwork port mismatch", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			c0(p).Ports[0].HostPort = 8080
		}, "web.yaml: spec.containers[0].ports[0].containerPort: Invalid value: 80: must match `hostPort` when `hostNetwork` is true"},
		{"unsupported resource", func(p *corev1.Pod) {
			c0(p).Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": q("1")}
		}, `web.yaml: spec.containers[0].resources.limits[nvidia.com/gpu]: Unsupported value: "nvidia.com/gpu": not supported by podhost (supported: cpu, memory, ephemeral-storage)`},
		{"limit below request", func(p *corev1.Pod) {
			c0(p).Resources.Requests = corev1.ResourceList{"memory": q("1Gi")}
			c0(p).Resources.Limits = corev1.ResourceList{"memory": q("512Mi")}
		}, `web.yaml: spec.containers[0].resources.requests[memory]: Invalid value: "1Gi": must be less than or equal to memory limit of 512Mi`},
		{"negative quantity", func(p *corev1.Pod) {
			c0(p).Resources.Requests = corev1.ResourceList{"cpu": q("-1")}
		}, `web.yaml: spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0`},
		{"restartPolicy", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" },
			`web.yaml: spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`},
		{"duplicate volume", func(p *corev1.Pod) { p.Spec.Volumes[1].Name = "data" },
			`web.yaml: spec.volumes[1].name: Duplicate value: "data"`},
		{"two volume sources", func(p *corev1.Pod) {
			p.Spec.Volumes[0].EmptyDir = &corev1.EmptyDirVolumeSource{}
		}, `web.yaml: spec.volumes[0]: Forbidden: may not specify more than 1 volume type`},
		{"secret volume item path", func(p *corev1.Pod) {
			p.Spec.Volumes[1] = corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s",
				Items: []corev1.KeyToPath{{Key: "k", Path: "../k"}}}}}
		}, `web.yaml: spec.volumes[1].secret.items[0].path: Invalid value: "../k": must not contain '..'`},
		{"configMap volume mode", func(p *corev1.Pod) {
			p.Spec.Volumes[1] = corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, DefaultMode: ptr(int32(0o1777))}}}
		}, `web.yaml: spec.volumes[1].configMap.defaultMode: Invalid value: 1023: must be a number between 0 and 0777 (octal), both inclusive`},
		{"env configMapKeyRef key", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "a/b"}}}}
		}, `web.yaml: spec.containers[0].env[0].valueFrom.configMapKeyRef.key: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`},
		{"hostPath relative", func(p *corev1.Pod) { p.Spec.Volumes[0].HostPath.Path = "srv" },
			`web.yaml: spec.volumes[0].hostPath.path: Invalid value: "srv": must be an absolute path`},
		{"hostPath dotdot", func(p *corev1.Pod) { p.Spec.Volumes[0].HostPath.Path = "/srv/../etc" },
			`web.yaml: spec.volumes[0].hostPath.path: Invalid value: "/srv/../etc": must not contain '..'`},
		{"hostPath type", func(p *corev1.Pod) { p.Spec.Volumes[0].HostPath.Type = ptrTo(corev1.HostPathType("Dir")) },
			`web.yaml: spec.volumes[0].hostPath.type: Unsupported value: "Dir": supported values: "", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"`},
		{"emptyDir medium", func(p *corev1.Pod) { p.Spec.Volumes[1].EmptyDir.Medium = "Disk" },
			`web.yaml: spec.volumes[1].emptyDir.medium: Unsupported value: "Disk": supported values: "", "Memory"`},
		{"emptyDir negative size", func(p *corev1.Pod) { p.Spec.Volumes[1].EmptyDir.SizeLimit = ptrTo(q("-1Mi")) },
			`web.yaml: spec.volumes[1].emptyDir.sizeLimit: Invalid value: "-1Mi": must be greater than or equal to 0`},
		{"mount unknown volume", func(p *corev1.Pod) { c0(p).VolumeMounts[0].Name = "nope" },
			`web.yaml: spec.containers[0].volumeMounts[0].name: Not found: "nope"`},
		{"mount relative", func(p *corev1.Pod) { c0(p).VolumeMounts[0].MountPath = "data" },
			`web.yaml: spec.containers[0].volumeMounts[0].mountPath: Invalid value: "data": must be an absolute path`},
		{"mount duplicate path", func(p *corev1.Pod) {
			c0(p).VolumeMounts = append(c0(p).VolumeMounts, corev1.VolumeMount{Name: "cache", MountPath: "/data"})
		}, `web.yaml: spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/data": must be unique`},
		{"env name", func(p *corev1.Pod) { c0(p).Env = []corev1.EnvVar{{Name: "A=B"}} },
			`web.yaml: spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`},
		{"env from secret", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
		}, `web.yaml: spec.containers[0].env[0].valueFrom.secretKeyRef.name: Required value`},
		{"probe without handler", func(p *corev1.Pod) { c0(p).LivenessProbe = &corev1.Probe{} },
			`web.yaml: spec.containers[0].livenessProbe: Required value: must specify a handler type`},
		{"probe two handlers", func(p *corev1.Pod) {
			c0(p).ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				Exec:      &corev1.ExecAction{Command: []string{"true"}},
				TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)},
			}}
		}, `web.yaml: spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type`},
		{"probe unknown named port", func(p *corev1.Pod) {
			c0(p).ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("admin")}}}
		}, `web.yaml: spec.containers[0].readinessProbe.httpGet.port: Not found: "admin"`},
		{"ephemeral containers", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "busybox"}}}
		}, `web.yaml: spec.ephemeralContainers: Forbidden: ephemeral containers are not supported by podhost`},
		{"grace period negative", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptrTo(int64(-1)) },
			`web.yaml: spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0`},
		{"active deadline zero", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo(int64(0)) },
			`web.yaml: spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodePod(t, tc.mutate)
			if got := errString(err); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if err != nil {
				assertOneLinePerError(t, err)
			}
		})
	}
}

// TestValidateRules covers the remaining rules by field path and a
// distinctive part of the message.
func TestValidateRules(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   string // substring of the single error
	}{
		{"init container probe", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1",
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}}
		}, "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"},
		{"apparmor annotations that agree with the fields", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1"}}
			p.Annotations = map[string]string{
				corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "init": "unconfined",
				corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "web":  "localhost/a",
			}
			c0(p).SecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptrTo("a")}}
		}, ""},
		{"init container lifecycle", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1",
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}}}
		}, "spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always"},
		{"sidecar with probes", func(p *corev1.Pod) {
			probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "busybox:1",
				RestartPolicy: ptrTo(corev1.ContainerRestartPolicyAlways), StartupProbe: probe, ReadinessProbe: probe}}
		}, ""},
		{"init restartPolicy OnFailure", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1",
				RestartPolicy: ptrTo(corev1.ContainerRestartPolicy("OnFailure"))}}
		}, `spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported values: "Always"`},
		{"regular container restartPolicy", func(p *corev1.Pod) {
			p.Spec.Containers[0].RestartPolicy = ptrTo(corev1.ContainerRestartPolicyAlways)
		}, "spec.containers[0].restartPolicy: Forbidden: a restartPolicy on a regular container (container restart rules) is not supported by podhost"},
		{"sidecar lifecycle", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "busybox:1", RestartPolicy: ptrTo(corev1.ContainerRestartPolicyAlways),
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}}}
		}, ""},
		{"sidecar lifecycle handler checked", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "busybox:1", RestartPolicy: ptrTo(corev1.ContainerRestartPolicyAlways),
				Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: -1}}}}}
		}, "spec.initContainers[0].lifecycle.postStart.sleep.seconds: Invalid value: -1"},
		{"init container invalid image", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
		}, "spec.initContainers[0].image: Required value"},
		{"init host port dup", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1", Ports: []corev1.ContainerPort{
				{ContainerPort: 1, HostPort: 9, HostIP: "127.0.0.1"}, {ContainerPort: 2, HostPort: 9, HostIP: "127.0.0.1"}}}}
		}, `spec.initContainers[0].ports[1].hostPort: Duplicate value: "TCP/127.0.0.1/9"`},
		{"host ports: a wildcard is only a string (AccumulateUniqueHostPorts)", func(p *corev1.Pod) {
			c0(p).Ports = []corev1.ContainerPort{{ContainerPort: 1, HostPort: 80}, {ContainerPort: 2, HostPort: 80, HostIP: "10.0.0.1"},
				{ContainerPort: 3, HostPort: 80, HostIP: "0.0.0.0"}, {ContainerPort: 4, HostPort: 80, HostIP: "::"}}
		}, ""},
		{"host ports differ by protocol", func(p *corev1.Pod) {
			c0(p).Ports = []corev1.ContainerPort{{ContainerPort: 53, HostPort: 53}, {ContainerPort: 53, HostPort: 53, Protocol: "UDP"}}
		}, ""},
		{"host ports differ by ip", func(p *corev1.Pod) {
			c0(p).Ports = []corev1.ContainerPort{{ContainerPort: 1, HostPort: 80, HostIP: "10.0.0.1"}, {ContainerPort: 2, HostPort: 80, HostIP: "10.0.0.2"}}
		}, ""},
		{"hostIP invalid", func(p *corev1.Pod) { c0(p).Ports[0].HostIP = "localhost" },
			`spec.containers[0].ports[0].hostIP: Invalid value: "localhost": must be a valid IP address`},
		{"port name invalid", func(p *corev1.Pod) { c0(p).Ports[0].Name = "http_port" },
			`spec.containers[0].ports[0].name: Invalid value: "http_port"`},
		{"hugepages refused", func(p *corev1.Pod) {
			c0(p).Resources.Limits = corev1.ResourceList{"hugepages-2Mi": q("4Mi"), "memory": q("1Gi")}
		}, `spec.containers[0].resources.limits[hugepages-2Mi]: Unsupported value: "hugepages-2Mi": not supported by podhost`},
		{"ephemeral-storage limit ok", func(p *corev1.Pod) {
			c0(p).Resources.Limits = corev1.ResourceList{"ephemeral-storage": q("1Gi")}
		}, ""},
		{"ephemeral-storage request over the limit", func(p *corev1.Pod) {
			c0(p).Resources.Limits = corev1.ResourceList{"ephemeral-storage": q("1Gi")}
			c0(p).Resources.Requests = corev1.ResourceList{"ephemeral-storage": q("2Gi")}
		}, `spec.containers[0].resources.requests[ephemeral-storage]: Invalid value: "2Gi": must be less than or equal to ephemeral-storage limit of 1Gi`},
		{"disk emptyDir sizeLimit ok", func(p *corev1.Pod) { p.Spec.Volumes[1].EmptyDir.SizeLimit = ptrTo(q("1Gi")) }, ""},
		{"ephemeral-storage request ok", func(p *corev1.Pod) {
			c0(p).Resources.Requests = corev1.ResourceList{"ephemeral-storage": q("1Gi")}
		}, ""},
		{"hugepages bad size", func(p *corev1.Pod) {
			c0(p).Resources.Limits = corev1.ResourceList{"hugepages-big": q("4Mi")}
		}, `resources.limits[hugepages-big]: Unsupported value: "hugepages-big"`},
		{"resource claims", func(p *corev1.Pod) {
			c0(p).Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		}, "spec.containers[0].resources.claims: Forbidden"},
		{"pod resources", func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": q("1")}}
		}, "spec.resources: Forbidden: pod-level resources are not supported by podhost"},
		{"emptyDir hugepages", func(p *corev1.Pod) { p.Spec.Volumes[1].EmptyDir.Medium = corev1.StorageMediumHugePages },
			`spec.volumes[1].emptyDir.medium: Unsupported value: "HugePages": not supported by podhost`},
		{"volume name", func(p *corev1.Pod) { p.Spec.Volumes[1].Name = "Cache"; c0(p).VolumeMounts = nil },
			`spec.volumes[1].name: Invalid value: "Cache"`},
		{"nfs volume", func(p *corev1.Pod) {
			p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}}
		}, `spec.volumes[1].nfs: Unsupported value: "nfs"`},
		{"pvc volume", func(p *corev1.Pod) {
			p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}
		}, `spec.volumes[1].persistentVolumeClaim: Unsupported value: "persistentVolumeClaim"`},
		{"projected serviceAccountToken", func(p *corev1.Pod) {
			p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}}}}
		}, `spec.volumes[1].projected.sources[0].serviceAccountToken: Unsupported value: "serviceAccountToken": not supported by podhost (there is no cluster to issue a token for a pod not from a cluster's API server; supported: configMap, downwardAPI, secret)`},
		{"configMap duplicate item path ok", func(p *corev1.Pod) {
			p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Items: []corev1.KeyToPath{{Key: "a", Path: "x"}, {Key: "b", Path: "x"}}}}
		}, ""},
		{"secret duplicate item path ok", func(p *corev1.Pod) {
			p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: "s", Items: []corev1.KeyToPath{{Key: "a", Path: "x"}, {Key: "b", Path: "x"}}}}
		}, ""},
		{"projected duplicate path", func(p *corev1.Pod) {
			p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Items: []corev1.KeyToPath{{Key: "k", Path: "x"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "x", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}}}}
		}, `spec.volumes[1].projected.sources[1].downwardAPI.items[0].path: Duplicate value: "x"`},
		{"downwardAPI fieldPath", func(p *corev1.Pod) {
			p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "ip", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}}
		}, `spec.volumes[1].downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: "status.podIP"`},
		{"downwardAPI resource container", func(p *corev1.Pod) {
			p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}}}}
		}, `spec.volumes[1].downwardAPI.items[0].resourceFieldRef.containerName: Required value`},
		{"subPath absolute", func(p *corev1.Pod) { c0(p).VolumeMounts[0].SubPath = "/x" },
			`spec.containers[0].volumeMounts[0].subPath: Invalid value: "/x": must be a relative path`},
		{"subPath dotdot", func(p *corev1.Pod) { c0(p).VolumeMounts[0].SubPath = "a/../../x" },
			`spec.containers[0].volumeMounts[0].subPath: Invalid value: "a/../../x": must not contain '..'`},
		{"subPathExpr with subPath", func(p *corev1.Pod) { c0(p).VolumeMounts[0].SubPathExpr, c0(p).VolumeMounts[0].SubPath = "$(POD)", "a" },
			"spec.containers[0].volumeMounts[0].subPathExpr: Invalid value: \"$(POD)\": subPathExpr and subPath are mutually exclusive"},
		{"subPathExpr upwards", func(p *corev1.Pod) { c0(p).VolumeMounts[0].SubPathExpr = "../$(POD)" },
			"spec.containers[0].volumeMounts[0].subPathExpr: Invalid value"},
		{"mountPath dotdot", func(p *corev1.Pod) { c0(p).VolumeMounts[0].MountPath = "/a/../b" },
			"mountPath: Invalid value: \"/a/../b\": must not contain '..'"},
		{"bidirectional unprivileged", func(p *corev1.Pod) {
			c0(p).VolumeMounts[0].MountPropagation = ptrTo(corev1.MountPropagationBidirectional)
		}, "mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"},
		{"recursiveReadOnly without readOnly", func(p *corev1.Pod) {
			c0(p).VolumeMounts[0].RecursiveReadOnly = ptrTo(corev1.RecursiveReadOnlyEnabled)
		}, "recursiveReadOnly: Forbidden: may only be specified when readOnly is true"},
		{"recursiveReadOnly Enabled", rroMount(true, corev1.RecursiveReadOnlyEnabled, corev1.MountPropagationNone), ""},
		{"recursiveReadOnly IfPossible without readOnly", rroMount(false, corev1.RecursiveReadOnlyIfPossible, ""),
			"spec.containers[0].volumeMounts[0].recursiveReadOnly: Forbidden: may only be specified when readOnly is true"},
		{"recursiveReadOnly with propagation", rroMount(true, corev1.RecursiveReadOnlyEnabled, corev1.MountPropagationHostToContainer),
			"recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified"},
		{"recursiveReadOnly unknown", rroMount(true, "Sometimes", ""),
			`recursiveReadOnly: Unsupported value: "Sometimes": supported values: "Disabled", "IfPossible", "Enabled"`},
		{"volumeDevices", func(p *corev1.Pod) {
			c0(p).VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/x"}}
		}, "spec.containers[0].volumeDevices: Forbidden"},
		{"envFrom", func(p *corev1.Pod) {
			c0(p).EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}
		}, "spec.containers[0].envFrom[0].configMapRef.name: Required value"},
		{"env value and valueFrom", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", Value: "x", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
		}, "spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty"},
		{"env fieldRef path", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.hostname"}}}}
		}, `spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.hostname"`},
		{"env fieldRef label ok", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}}}
		}, ""},
		{"env fieldRef bare labels", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}
		}, `spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "metadata.labels"`},
		{"env fieldRef bare annotations", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}}}}
		}, `spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "metadata.annotations"`},
		{"env fieldRef label key not qualified", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['bad key!']"}}}}
		}, `spec.containers[0].env[0].valueFrom.fieldRef: Invalid value: "bad key!": name part must consist of alphanumeric characters`},
		{"env fieldRef label key uppercase ok", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['example.com/App']"}}}}
		}, ""},
		{"env fieldRef annotation key lower-cased", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['Example.COM/Key']"}}}}
		}, ""},
		{"env fieldRef subscript of a scalar", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name['x']"}}}}
		}, `spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Invalid value: "metadata.name['x']": does not support subscript`},
		{"env memory divisor 3", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("3")}}}}
		}, `spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.memory": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource`},
		{"env cpu divisor 100m", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("100m")}}}}
		}, `spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "requests.cpu": only divisor's values 1m and 1 are supported with the cpu resource`},
		{"env cpu divisor 1m ok", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}}}
		}, ""},
		{"env hugepages limit ok", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.hugepages-2Mi", Divisor: resource.MustParse("1Mi")}}}}
		}, ""},
		{"env hugepages divisor 3", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.hugepages-1Gi", Divisor: resource.MustParse("3")}}}}
		}, `spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "requests.hugepages-1Gi": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource`},
		{"env hugepages bad kind", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "capacity.hugepages-2Mi"}}}}
		}, `spec.containers[0].env[0].valueFrom.resourceFieldRef.resource: Invalid value: "capacity.hugepages-2Mi"`},
		{"downwardAPI hugepages ok", func(p *corev1.Pod) {
			p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "huge", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "web", Resource: "limits.hugepages-1Gi", Divisor: resource.MustParse("1Mi")}}}}}
		}, ""},
		{"env memory divisor 1024Ki ok", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1024Ki")}}}}
		}, ""},
		{"downwardAPI bare labels ok", func(p *corev1.Pod) {
			p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}
		}, ""},
		{"downwardAPI label key not qualified", func(p *corev1.Pod) {
			p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "l", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['-x']"}}}}}
		}, `spec.volumes[1].downwardAPI.items[0].fieldRef: Invalid value: "-x"`},
		{"downwardAPI cpu divisor 100m", func(p *corev1.Pod) {
			p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "web", Resource: "limits.cpu", Divisor: resource.MustParse("100m")}}}}}
		}, `spec.volumes[1].downwardAPI.items[0].resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor's values 1m and 1 are supported with the cpu resource`},
		{"env resourceFieldRef", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.gpu"}}}}
		}, `spec.containers[0].env[0].valueFrom.resourceFieldRef.resource: Invalid value: "limits.gpu"`},
		{"env resourceFieldRef container", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "x", Resource: "limits.cpu"}}}}
		}, `spec.containers[0].env[0].valueFrom.resourceFieldRef.containerName: Not found: "x"`},
		{"env empty valueFrom", func(p *corev1.Pod) {
			c0(p).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{}}}
		}, "spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`"},
		{"liveness successThreshold", func(p *corev1.Pod) {
			c0(p).LivenessProbe = &corev1.Probe{SuccessThreshold: 2, ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000}}}
		}, "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"},
		{"probe negative delay", func(p *corev1.Pod) {
			c0(p).StartupProbe = &corev1.Probe{InitialDelaySeconds: -1, ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
		}, "spec.containers[0].startupProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0"},
		{"probe exec empty", func(p *corev1.Pod) {
			c0(p).LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{}}}
		}, "spec.containers[0].livenessProbe.exec.command: Required value"},
		{"probe grpc port", func(p *corev1.Pod) {
			c0(p).LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 0}}}
		}, "spec.containers[0].livenessProbe.grpc.port: Invalid value: 0"},
		{"probe http scheme", func(p *corev1.Pod) {
			c0(p).LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80), Scheme: "FTP"}}}
		}, `spec.containers[0].livenessProbe.httpGet.scheme: Unsupported value: "FTP"`},
		{"probe named port ok", func(p *corev1.Pod) {
			c0(p).LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}}
		}, ""},
		{"preStop two handlers", func(p *corev1.Pod) {
			c0(p).Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
				Exec: &corev1.ExecAction{Command: []string{"x"}}, Sleep: &corev1.SleepAction{Seconds: 3}}}
		}, "spec.containers[0].lifecycle.preStop.sleep: Forbidden: may not specify more than 1 handler type"},
		{"preStop sleep negative", func(p *corev1.Pod) {
			c0(p).Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: -3}}}
		}, "spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: -3"},
		{"postStart tcpSocket", func(p *corev1.Pod) {
			c0(p).Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
		}, "spec.containers[0].lifecycle.postStart.tcpSocket: Forbidden: not supported by podhost in a lifecycle hook"},
		{"preStop no handler", func(p *corev1.Pod) {
			c0(p).Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{}}
		}, "spec.containers[0].lifecycle.preStop: Required value: must specify a handler type"},
		{"pullPolicy", func(p *corev1.Pod) { c0(p).ImagePullPolicy = "Sometimes" },
			`spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes"`},
		{"workingDir relative", func(p *corev1.Pod) { c0(p).WorkingDir = "app" },
			`spec.containers[0].workingDir: Invalid value: "app": must be an absolute path`},
		{"privileged no escalation", func(p *corev1.Pod) {
			c0(p).SecurityContext = &corev1.SecurityContext{Privileged: ptrTo(true), AllowPrivilegeEscalation: ptrTo(false)}
		}, "spec.containers[0].securityContext: Invalid value: \"\": cannot set `allowPrivilegeEscalation` to false and `privileged` to true"},
		{"capability add with CAP_ prefix", func(p *corev1.Pod) {
			c0(p).SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CAP_NET_ADMIN"}}}
		}, `spec.containers[0].securityContext.capabilities.add[0]: Invalid value: "CAP_NET_ADMIN": capability names have no CAP_ prefix (the kubelet would ignore it)`},
		{"capability drop with cap_ prefix", func(p *corev1.Pod) {
			c0(p).SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL", "cap_kill"}}}
		}, `spec.containers[0].securityContext.capabilities.drop[1]: Invalid value: "cap_kill": capability names have no CAP_ prefix`},
		{"runAsUser negative", func(p *corev1.Pod) {
			c0(p).SecurityContext = &corev1.SecurityContext{RunAsUser: ptrTo(int64(-1))}
		}, "spec.containers[0].securityContext.runAsUser: Invalid value: -1"},
		{"dnsPolicy", func(p *corev1.Pod) { p.Spec.DNSPolicy = "Cluster" },
			`spec.dnsPolicy: Unsupported value: "Cluster"`},
		{"dnsPolicy None needs nameservers", func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone },
			"spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when dnsPolicy is None"},
		{"dnsConfig nameserver", func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"dns.example"}}
		}, `spec.dnsConfig.nameservers[0]: Invalid value: "dns.example": must be a valid IP address`},
		{"dnsConfig searches: underscores, a lone dot and a trailing dot (RelaxedDNSSearchValidation)", func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"abc_d.example.com", "_sip._tcp.example.com.", "."}}
		}, ""},
		{"dnsConfig search invalid", func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"Bad.example"}}
		}, `spec.dnsConfig.searches[0]: Invalid value: "Bad.example": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.'`},
		{"dnsConfig search list over 2048 characters", func(p *corev1.Pod) {
			long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) // 191
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: slices.Repeat([]string{long}, 11)}
		}, "spec.dnsConfig.searches: Invalid value: "},
		{"hostAliases ip", func(p *corev1.Pod) {
			p.Spec.HostAliases = []corev1.HostAlias{{IP: "x", Hostnames: []string{"a"}}}
		}, `spec.hostAliases[0].ip: Invalid value: "x": must be a valid IP address`},
		{"hostname", func(p *corev1.Pod) { p.Spec.Hostname = "a.b" },
			`spec.hostname: Invalid value: "a.b"`},
		{"shareProcessNamespace", func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptrTo(true) }, ""},
		{"shareProcessNamespace with hostPID", func(p *corev1.Pod) { p.Spec.ShareProcessNamespace, p.Spec.HostPID = ptrTo(true), true },
			"spec.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"},
		{"shareProcessNamespace with hostUsers false", func(p *corev1.Pod) { p.Spec.ShareProcessNamespace, p.Spec.HostUsers = ptrTo(true), ptrTo(false) },
			"spec.shareProcessNamespace: Forbidden: a shared PID namespace in a pod with hostUsers: false is not supported by podhost"},
		{"runtimeClassName", func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptrTo("gvisor") },
			`spec.runtimeClassName: Unsupported value: "gvisor": not supported by podhost (podhost always uses runc)`},
		{"hostUsers false", func(p *corev1.Pod) { p.Spec.HostUsers = ptrTo(false) }, ""},
		{"hostUsers false with hostNetwork", func(p *corev1.Pod) {
			p.Spec.HostUsers, p.Spec.HostNetwork = ptrTo(false), true
			p.Spec.Containers[0].Ports = nil
		}, "spec.hostNetwork: Forbidden: when `hostUsers` is false"},
		{"hostUsers false with hostPID", func(p *corev1.Pod) { p.Spec.HostUsers, p.Spec.HostPID = ptrTo(false), true },
			"spec.hostPID: Forbidden: when `hostUsers` is false"},
		{"hostUsers false with hostIPC", func(p *corev1.Pod) { p.Spec.HostUsers, p.Spec.HostIPC = ptrTo(false), true },
			"spec.hostIPC: Forbidden: when `hostUsers` is false"},
		{"hostUsers false, runAsUser beyond the namespace", func(p *corev1.Pod) {
			p.Spec.HostUsers = ptrTo(false)
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptrTo(int64(65536))}
		}, "spec.containers[0].securityContext.runAsUser: Invalid value: 65536: must be less than 65536 when `hostUsers` is false"},
		{"hostUsers false, fsGroup beyond the namespace", func(p *corev1.Pod) {
			p.Spec.HostUsers = ptrTo(false)
			p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptrTo(int64(70000)), RunAsUser: ptrTo(int64(65535))}
		}, "spec.securityContext.fsGroup: Invalid value: 70000: must be less than 65536"},
		{"hostUsers true, runAsUser 65536", func(p *corev1.Pod) {
			p.Spec.HostUsers = ptrTo(true)
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptrTo(int64(65536))}
		}, ""},
		{"hostUsers false, HostToContainer propagation", func(p *corev1.Pod) {
			p.Spec.HostUsers = ptrTo(false)
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			prop := corev1.MountPropagationHostToContainer
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v", MountPropagation: &prop}}
		}, `spec.containers[0].volumeMounts[0].mountPropagation: Unsupported value: "HostToContainer": not supported by podhost (a pod with hostUsers: false`},
		{"os windows", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: "windows"} },
			`spec.os.name: Unsupported value: "windows": not supported by podhost (supported: linux)`},
		{"cluster-only fields are ignored", func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "web"}
			p.Annotations = map[string]string{"a": "b"}
			p.Spec.NodeName = "node-1"
			p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Exists"}}
			p.Spec.Affinity = &corev1.Affinity{}
			p.Spec.ServiceAccountName = "sa"
			p.Spec.PriorityClassName = "high"
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}}
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodePod(t, tc.mutate)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			assertOneLinePerError(t, err)
			if n := len(err.(ErrorList)); n != 1 {
				t.Errorf("got %d errors, want 1:\n%v", n, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got  %v\nwant substring %s", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "web.yaml: ") {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}

// rroMount sets the first volumeMount's readOnly, recursiveReadOnly and
// mountPropagation ("": unset).
func rroMount(readOnly bool, mode corev1.RecursiveReadOnlyMode, prop corev1.MountPropagationMode) func(p *corev1.Pod) {
	return func(p *corev1.Pod) {
		vm := &c0(p).VolumeMounts[0]
		vm.ReadOnly, vm.RecursiveReadOnly = readOnly, &mode
		if prop != "" {
			vm.MountPropagation = &prop
		}
	}
}

// Both recursiveReadOnly rules are reported, as validateMountRecursiveReadOnly.
func TestValidateRecursiveReadOnlyBothRules(t *testing.T) {
	_, err := decodePod(t, rroMount(false, corev1.RecursiveReadOnlyIfPossible, corev1.MountPropagationHostToContainer))
	want := "web.yaml: spec.containers[0].volumeMounts[0].recursiveReadOnly: Forbidden: may only be specified when readOnly is true\n" +
		"web.yaml: spec.containers[0].volumeMounts[0].recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified"
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

func TestValidateReportsAllErrors(t *testing.T) {
	_, err := decodePod(t, func(p *corev1.Pod) {
		p.Name = "A"
		c0(p).Image = ""
		p.Spec.RestartPolicy = "x"
	})
	want := "web.yaml: metadata.name: Invalid value: \"A\": " + dnsSubdomainMsg + "\n" +
		"web.yaml: spec.containers[0].image: Required value\n" +
		"web.yaml: spec.restartPolicy: Unsupported value: \"x\": supported values: \"Always\", \"OnFailure\", \"Never\""
	if got := errString(err); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
