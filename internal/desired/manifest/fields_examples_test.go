package manifest

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// fieldExamples set one field of docs/fields.md on basePod: every refused
// and every honoured field has one (TestFieldAuditAgreesWithValidation).
var fieldExamples = map[string]func(p *corev1.Pod){
	"ObjectMeta.name":                       func(p *corev1.Pod) { p.Name = "web2" },
	"ObjectMeta.generateName":               func(p *corev1.Pod) { p.Name, p.GenerateName = "", "web-" },
	"ObjectMeta.namespace":                  func(p *corev1.Pod) { p.Namespace = "prod" },
	"ObjectMeta.uid":                        func(p *corev1.Pod) { p.UID = "0b3f-42" },
	"ObjectMeta.deletionTimestamp":          func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now },
	"ObjectMeta.deletionGracePeriodSeconds": func(p *corev1.Pod) { p.DeletionGracePeriodSeconds = ptrTo(int64(1)) },
	"ObjectMeta.labels":                     func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web"} },
	"ObjectMeta.annotations":                func(p *corev1.Pod) { p.Annotations = map[string]string{"a": "b"} },

	"PodSpec.volumes":        func(p *corev1.Pod) {},
	"PodSpec.initContainers": func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1"}} },
	"PodSpec.containers":     func(p *corev1.Pod) {},
	"PodSpec.ephemeralContainers": func(p *corev1.Pod) {
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "busybox:1"}}}
	},
	"PodSpec.restartPolicy":                 func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever },
	"PodSpec.terminationGracePeriodSeconds": func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptrTo(int64(5)) },
	"PodSpec.activeDeadlineSeconds":         func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptrTo(int64(60)) },
	"PodSpec.priorityClassName":             func(p *corev1.Pod) { p.Spec.PriorityClassName = "system-node-critical" },
	"PodSpec.priority":                      func(p *corev1.Pod) { p.Spec.Priority = ptrTo(int32(2000001000)) },
	"PodSpec.tolerations": func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	},
	"PodSpec.dnsPolicy":    func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSDefault },
	"PodSpec.nodeSelector": func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"} },
	"PodSpec.affinity": func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpExists}}}},
		}}}
	},
	"PodSpec.hostNetwork":           func(p *corev1.Pod) { p.Spec.HostNetwork = true; c0(p).Ports = nil },
	"PodSpec.hostPID":               func(p *corev1.Pod) { p.Spec.HostPID = true },
	"PodSpec.hostIPC":               func(p *corev1.Pod) { p.Spec.HostIPC = true },
	"PodSpec.shareProcessNamespace": func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptrTo(true) },
	"PodSpec.securityContext":       func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{} },
	"PodSpec.imagePullSecrets":      func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}} },
	"PodSpec.hostname":              func(p *corev1.Pod) { p.Spec.Hostname = "box" },
	"PodSpec.subdomain":             func(p *corev1.Pod) { p.Spec.Subdomain = "svc" },
	"PodSpec.hostAliases": func(p *corev1.Pod) {
		p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"db"}}}
	},
	"PodSpec.dnsConfig":          func(p *corev1.Pod) { p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"corp.example"}} },
	"PodSpec.readinessGates":     func(p *corev1.Pod) { p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "x/ready"}} },
	"PodSpec.runtimeClassName":   func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptrTo("gvisor") },
	"PodSpec.enableServiceLinks": func(p *corev1.Pod) { p.Spec.EnableServiceLinks = ptrTo(false) },
	"PodSpec.overhead":           func(p *corev1.Pod) { p.Spec.Overhead = corev1.ResourceList{"cpu": q("100m")} },
	"PodSpec.setHostnameAsFQDN":  func(p *corev1.Pod) { p.Spec.SetHostnameAsFQDN = ptrTo(true) },
	"PodSpec.os":                 func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Linux} },
	"PodSpec.hostUsers":          func(p *corev1.Pod) { p.Spec.HostUsers = ptrTo(false) },
	"PodSpec.resourceClaims":     func(p *corev1.Pod) { p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}} },
	"PodSpec.resources":          func(p *corev1.Pod) { p.Spec.Resources = &corev1.ResourceRequirements{} },
	"PodSpec.hostnameOverride":   func(p *corev1.Pod) { p.Spec.HostnameOverride = ptrTo("box") },

	"PodSecurityContext.seLinuxOptions": func(p *corev1.Pod) { psc(p).SELinuxOptions = &corev1.SELinuxOptions{Level: "s0"} },
	"PodSecurityContext.windowsOptions": func(p *corev1.Pod) {
		psc(p).WindowsOptions = &corev1.WindowsSecurityContextOptions{RunAsUserName: ptrTo("u")}
	},
	"PodSecurityContext.runAsUser":          func(p *corev1.Pod) { psc(p).RunAsUser = ptrTo(int64(1000)) },
	"PodSecurityContext.runAsGroup":         func(p *corev1.Pod) { psc(p).RunAsGroup = ptrTo(int64(1000)) },
	"PodSecurityContext.runAsNonRoot":       func(p *corev1.Pod) { psc(p).RunAsNonRoot = ptrTo(true) },
	"PodSecurityContext.supplementalGroups": func(p *corev1.Pod) { psc(p).SupplementalGroups = []int64{10} },
	"PodSecurityContext.supplementalGroupsPolicy": func(p *corev1.Pod) {
		psc(p).SupplementalGroupsPolicy = ptrTo(corev1.SupplementalGroupsPolicyStrict)
	},
	"PodSecurityContext.fsGroup": func(p *corev1.Pod) { psc(p).FSGroup = ptrTo(int64(2000)) },
	"PodSecurityContext.sysctls": func(p *corev1.Pod) { psc(p).Sysctls = []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}} },
	"PodSecurityContext.fsGroupChangePolicy": func(p *corev1.Pod) {
		psc(p).FSGroupChangePolicy = ptrTo(corev1.FSGroupChangeOnRootMismatch)
	},
	"PodSecurityContext.seccompProfile": func(p *corev1.Pod) {
		psc(p).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptrTo("audit.json")}
	},
	"PodSecurityContext.appArmorProfile": func(p *corev1.Pod) {
		psc(p).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	},
	"PodSecurityContext.seLinuxChangePolicy": func(p *corev1.Pod) { psc(p).SELinuxChangePolicy = ptrTo(corev1.SELinuxChangePolicyRecursive) },

	"Container.name":       func(p *corev1.Pod) { c0(p).Name = "app" },
	"Container.image":      func(p *corev1.Pod) { c0(p).Image = "busybox:1.36" },
	"Container.command":    func(p *corev1.Pod) { c0(p).Command = []string{"sleep"} },
	"Container.args":       func(p *corev1.Pod) { c0(p).Args = []string{"1d"} },
	"Container.workingDir": func(p *corev1.Pod) { c0(p).WorkingDir = "/srv" },
	"Container.ports":      func(p *corev1.Pod) {},
	"Container.envFrom": func(p *corev1.Pod) {
		c0(p).EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}
	},
	"Container.env":       func(p *corev1.Pod) { c0(p).Env = []corev1.EnvVar{{Name: "A", Value: "1"}} },
	"Container.resources": func(p *corev1.Pod) { c0(p).Resources.Limits = corev1.ResourceList{"cpu": q("1")} },
	"Container.resizePolicy": func(p *corev1.Pod) {
		c0(p).ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	},
	"Container.restartPolicy": func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "side", Image: "busybox:1", RestartPolicy: ptrTo(corev1.ContainerRestartPolicyAlways)}}
	},
	"Container.restartPolicyRules": func(p *corev1.Pod) {
		c0(p).RestartPolicy = ptrTo(corev1.ContainerRestartPolicyNever)
		c0(p).RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	},
	"Container.volumeMounts": func(p *corev1.Pod) {},
	"Container.volumeDevices": func(p *corev1.Pod) {
		c0(p).VolumeDevices = []corev1.VolumeDevice{{Name: "cache", DevicePath: "/dev/x"}}
	},
	"Container.livenessProbe":  func(p *corev1.Pod) { c0(p).LivenessProbe = tcpProbe() },
	"Container.readinessProbe": func(p *corev1.Pod) { c0(p).ReadinessProbe = tcpProbe() },
	"Container.startupProbe":   func(p *corev1.Pod) { c0(p).StartupProbe = tcpProbe() },
	"Container.lifecycle": func(p *corev1.Pod) {
		c0(p).Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}
	},
	"Container.imagePullPolicy":          func(p *corev1.Pod) { c0(p).ImagePullPolicy = corev1.PullNever },
	"Container.terminationMessagePath":   func(p *corev1.Pod) { c0(p).TerminationMessagePath = "/tmp/done" },
	"Container.terminationMessagePolicy": func(p *corev1.Pod) { c0(p).TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError },
	"Container.securityContext":          func(p *corev1.Pod) { c0(p).SecurityContext = &corev1.SecurityContext{} },
	"Container.stdin":                    func(p *corev1.Pod) { c0(p).Stdin, c0(p).TTY = true, true },
	"Container.stdinOnce":                func(p *corev1.Pod) { c0(p).Stdin, c0(p).StdinOnce, c0(p).TTY = true, true, true },
	"Container.tty":                      func(p *corev1.Pod) { c0(p).TTY = true },

	"SecurityContext.capabilities":   func(p *corev1.Pod) { csc(p).Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}} },
	"SecurityContext.privileged":     func(p *corev1.Pod) { csc(p).Privileged = ptrTo(true) },
	"SecurityContext.seLinuxOptions": func(p *corev1.Pod) { csc(p).SELinuxOptions = &corev1.SELinuxOptions{Level: "s0"} },
	"SecurityContext.windowsOptions": func(p *corev1.Pod) {
		csc(p).WindowsOptions = &corev1.WindowsSecurityContextOptions{RunAsUserName: ptrTo("u")}
	},
	"SecurityContext.runAsUser":                func(p *corev1.Pod) { csc(p).RunAsUser = ptrTo(int64(1000)) },
	"SecurityContext.runAsGroup":               func(p *corev1.Pod) { csc(p).RunAsGroup = ptrTo(int64(1000)) },
	"SecurityContext.runAsNonRoot":             func(p *corev1.Pod) { csc(p).RunAsNonRoot = ptrTo(true) },
	"SecurityContext.readOnlyRootFilesystem":   func(p *corev1.Pod) { csc(p).ReadOnlyRootFilesystem = ptrTo(true) },
	"SecurityContext.allowPrivilegeEscalation": func(p *corev1.Pod) { csc(p).AllowPrivilegeEscalation = ptrTo(false) },
	"SecurityContext.procMount":                func(p *corev1.Pod) { csc(p).ProcMount = ptrTo(corev1.DefaultProcMount) },
	"SecurityContext.seccompProfile": func(p *corev1.Pod) {
		csc(p).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	},
	"SecurityContext.appArmorProfile": func(p *corev1.Pod) {
		csc(p).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	},

	"ContainerPort.name":          func(p *corev1.Pod) { c0(p).Ports[0].Name = "web" },
	"ContainerPort.hostPort":      func(p *corev1.Pod) { c0(p).Ports[0].HostPort = 8080 },
	"ContainerPort.containerPort": func(p *corev1.Pod) { c0(p).Ports[0].ContainerPort = 8081 },
	"ContainerPort.protocol":      func(p *corev1.Pod) { c0(p).Ports[0].Protocol = corev1.ProtocolUDP },
	"ContainerPort.hostIP":        func(p *corev1.Pod) { c0(p).Ports[0].HostPort, c0(p).Ports[0].HostIP = 8080, "127.0.0.1" },

	"EnvVar.name":  func(p *corev1.Pod) { c0(p).Env = []corev1.EnvVar{{Name: "A"}} },
	"EnvVar.value": func(p *corev1.Pod) { c0(p).Env = []corev1.EnvVar{{Name: "A", Value: "1"}} },
	"EnvVar.valueFrom": func(p *corev1.Pod) {
		env(p, &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}})
	},
	"EnvVarSource.fieldRef": func(p *corev1.Pod) {
		env(p, &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}})
	},
	"EnvVarSource.resourceFieldRef": func(p *corev1.Pod) {
		env(p, &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}})
	},
	"EnvVarSource.configMapKeyRef": func(p *corev1.Pod) {
		env(p, &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "k"}})
	},
	"EnvVarSource.secretKeyRef": func(p *corev1.Pod) {
		env(p, &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}})
	},
	"ConfigMapVolumeSource.name":        func(p *corev1.Pod) { cmVol(p) },
	"ConfigMapVolumeSource.items":       func(p *corev1.Pod) { cmVol(p).Items = []corev1.KeyToPath{{Key: "k", Path: "p"}} },
	"ConfigMapVolumeSource.defaultMode": func(p *corev1.Pod) { cmVol(p).DefaultMode = ptrTo(int32(0o400)) },
	"ConfigMapVolumeSource.optional":    func(p *corev1.Pod) { cmVol(p).Optional = ptrTo(true) },
	"ConfigMapVolumeSource.defaultUser": func(p *corev1.Pod) { cmVol(p).DefaultUser = ptrTo(int64(1000)) },
	"SecretVolumeSource.secretName":     func(p *corev1.Pod) { secVol(p) },
	"SecretVolumeSource.items":          func(p *corev1.Pod) { secVol(p).Items = []corev1.KeyToPath{{Key: "k", Path: "p"}} },
	"SecretVolumeSource.defaultMode":    func(p *corev1.Pod) { secVol(p).DefaultMode = ptrTo(int32(0o400)) },
	"SecretVolumeSource.optional":       func(p *corev1.Pod) { secVol(p).Optional = ptrTo(true) },
	"SecretVolumeSource.defaultUser":    func(p *corev1.Pod) { secVol(p).DefaultUser = ptrTo(int64(1000)) },
	"KeyToPath.key":                     func(p *corev1.Pod) { secVol(p).Items = []corev1.KeyToPath{{Key: "k", Path: "p"}} },
	"KeyToPath.path":                    func(p *corev1.Pod) { secVol(p).Items = []corev1.KeyToPath{{Key: "k", Path: "d/p"}} },
	"KeyToPath.mode": func(p *corev1.Pod) {
		secVol(p).Items = []corev1.KeyToPath{{Key: "k", Path: "p", Mode: ptrTo(int32(0o600))}}
	},
	"KeyToPath.user": func(p *corev1.Pod) {
		secVol(p).Items = []corev1.KeyToPath{{Key: "k", Path: "p", User: ptrTo(int64(1000))}}
	},
	"EnvVarSource.fileKeyRef": func(p *corev1.Pod) {
		env(p, &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "cache", Path: "env", Key: "k"}})
	},

	"ResourceRequirements.limits":   func(p *corev1.Pod) { c0(p).Resources.Limits = corev1.ResourceList{"memory": q("1Gi")} },
	"ResourceRequirements.requests": func(p *corev1.Pod) { c0(p).Resources.Requests = corev1.ResourceList{"ephemeral-storage": q("1Gi")} },
	"ResourceRequirements.claims":   func(p *corev1.Pod) { c0(p).Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}} },

	"VolumeMount.name":     func(p *corev1.Pod) { c0(p).VolumeMounts[0].Name = "cache" },
	"VolumeMount.readOnly": func(p *corev1.Pod) { c0(p).VolumeMounts[0].ReadOnly = true },
	"VolumeMount.recursiveReadOnly": func(p *corev1.Pod) {
		c0(p).VolumeMounts[0].ReadOnly = true
		c0(p).VolumeMounts[0].RecursiveReadOnly = ptrTo(corev1.RecursiveReadOnlyIfPossible)
	},
	"VolumeMount.mountPath": func(p *corev1.Pod) { c0(p).VolumeMounts[0].MountPath = "/srv" },
	"VolumeMount.subPath":   func(p *corev1.Pod) { c0(p).VolumeMounts[0].SubPath = "a/b" },
	"VolumeMount.mountPropagation": func(p *corev1.Pod) {
		c0(p).VolumeMounts[0].MountPropagation = ptrTo(corev1.MountPropagationHostToContainer)
	},
	"VolumeMount.subPathExpr":      func(p *corev1.Pod) { c0(p).VolumeMounts[0].SubPathExpr = "$(POD)" },
	"VolumeMount.bindMountOptions": func(p *corev1.Pod) { c0(p).VolumeMounts[0].BindMountOptions = []string{"noexec"} },

	"Probe.exec":                func(p *corev1.Pod) { c0(p).LivenessProbe = &corev1.Probe{ProbeHandler: execHandler()} },
	"Probe.httpGet":             func(p *corev1.Pod) { c0(p).LivenessProbe = &corev1.Probe{ProbeHandler: httpHandler()} },
	"Probe.tcpSocket":           func(p *corev1.Pod) { c0(p).LivenessProbe = tcpProbe() },
	"Probe.grpc":                func(p *corev1.Pod) { c0(p).LivenessProbe = &corev1.Probe{ProbeHandler: grpcHandler()} },
	"Probe.initialDelaySeconds": func(p *corev1.Pod) { c0(p).LivenessProbe = tcpProbe(); c0(p).LivenessProbe.InitialDelaySeconds = 5 },
	"Probe.timeoutSeconds":      func(p *corev1.Pod) { c0(p).LivenessProbe = tcpProbe(); c0(p).LivenessProbe.TimeoutSeconds = 5 },
	"Probe.periodSeconds":       func(p *corev1.Pod) { c0(p).LivenessProbe = tcpProbe(); c0(p).LivenessProbe.PeriodSeconds = 5 },
	"Probe.successThreshold":    func(p *corev1.Pod) { c0(p).ReadinessProbe = tcpProbe(); c0(p).ReadinessProbe.SuccessThreshold = 2 },
	"Probe.failureThreshold":    func(p *corev1.Pod) { c0(p).LivenessProbe = tcpProbe(); c0(p).LivenessProbe.FailureThreshold = 5 },
	"Probe.terminationGracePeriodSeconds": func(p *corev1.Pod) {
		c0(p).LivenessProbe = tcpProbe()
		c0(p).LivenessProbe.TerminationGracePeriodSeconds = ptrTo(int64(5))
	},
	"ProbeHandler.exec":      func(p *corev1.Pod) { c0(p).ReadinessProbe = &corev1.Probe{ProbeHandler: execHandler()} },
	"ProbeHandler.httpGet":   func(p *corev1.Pod) { c0(p).ReadinessProbe = &corev1.Probe{ProbeHandler: httpHandler()} },
	"ProbeHandler.tcpSocket": func(p *corev1.Pod) { c0(p).ReadinessProbe = tcpProbe() },
	"ProbeHandler.grpc":      func(p *corev1.Pod) { c0(p).ReadinessProbe = &corev1.Probe{ProbeHandler: grpcHandler()} },

	"Lifecycle.postStart": func(p *corev1.Pod) {
		hook(p).PostStart = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
	},
	"Lifecycle.preStop": func(p *corev1.Pod) {
		hook(p).PreStop = &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}
	},
	"Lifecycle.stopSignal": func(p *corev1.Pod) {
		p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
		hook(p).StopSignal = ptrTo(corev1.SIGINT)
	},
	"LifecycleHandler.exec": func(p *corev1.Pod) {
		hook(p).PreStop = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
	},
	"LifecycleHandler.httpGet": func(p *corev1.Pod) {
		hook(p).PreStop = &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}}
	},
	"LifecycleHandler.tcpSocket": func(p *corev1.Pod) {
		hook(p).PreStop = &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}
	},
	"LifecycleHandler.sleep": func(p *corev1.Pod) {
		hook(p).PreStop = &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}
	},

	"Volume.name":     func(p *corev1.Pod) { p.Spec.Volumes[1].Name = "scratch" },
	"Volume.hostPath": func(p *corev1.Pod) {},
	"Volume.emptyDir": func(p *corev1.Pod) {},
	"Volume.secret": func(p *corev1.Pod) {
		p.Spec.Volumes[1].EmptyDir = nil
		p.Spec.Volumes[1].Secret = &corev1.SecretVolumeSource{SecretName: "s"}
	},
	"Volume.configMap": func(p *corev1.Pod) {
		p.Spec.Volumes[1].EmptyDir = nil
		p.Spec.Volumes[1].ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}
	},

	"HostPathVolumeSource.path":   func(p *corev1.Pod) { p.Spec.Volumes[0].HostPath.Path = "/srv/other" },
	"HostPathVolumeSource.type":   func(p *corev1.Pod) { p.Spec.Volumes[0].HostPath.Type = ptrTo(corev1.HostPathDirectoryOrCreate) },
	"EmptyDirVolumeSource.medium": func(p *corev1.Pod) { p.Spec.Volumes[1].EmptyDir.Medium = corev1.StorageMediumMemory },
	"EmptyDirVolumeSource.sizeLimit": func(p *corev1.Pod) {
		p.Spec.Volumes[1].EmptyDir.Medium, p.Spec.Volumes[1].EmptyDir.SizeLimit = corev1.StorageMediumMemory, ptrTo(q("64Mi"))
	},
	"EmptyDirVolumeSource.mode":   func(p *corev1.Pod) { p.Spec.Volumes[1].EmptyDir.Mode = ptrTo(int32(0o750)) },
	"Volume.image":                imageVolume,
	"ImageVolumeSource.reference": imageVolume,
	"ImageVolumeSource.pullPolicy": func(p *corev1.Pod) {
		imageVolume(p)
		p.Spec.Volumes[1].Image.PullPolicy = corev1.PullNever
	},
}

// imageVolume makes the second volume an image volume.
func imageVolume(p *corev1.Pod) {
	p.Spec.Volumes[1].EmptyDir = nil
	p.Spec.Volumes[1].Image = &corev1.ImageVolumeSource{Reference: "registry.example/data:1"}
}

// refusedValues are values of honoured fields that podhost refuses: the
// field's row says which. Each must be refused naming the field.
var refusedValues = map[string]func(p *corev1.Pod){
	"SecurityContext.procMount":  func(p *corev1.Pod) { csc(p).ProcMount = ptrTo(corev1.UnmaskedProcMount) },
	"PodSecurityContext.sysctls": func(p *corev1.Pod) { psc(p).Sysctls = []corev1.Sysctl{{Name: "kernel.panic", Value: "1"}} },
	"PodSecurityContext.sysctls#host": func(p *corev1.Pod) {
		p.Spec.HostNetwork = true
		c0(p).Ports = nil
		psc(p).Sysctls = []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1"}}
	},
	"PodSecurityContext.sysctls#ipc": func(p *corev1.Pod) {
		p.Spec.HostIPC = true
		psc(p).Sysctls = []corev1.Sysctl{{Name: "kernel.shmmax", Value: "1"}}
	},
	"ResourceRequirements.limits": func(p *corev1.Pod) {
		c0(p).Resources.Limits = corev1.ResourceList{"hugepages-2Mi": q("4Mi"), "memory": q("1Gi")}
	},
	"ResourceRequirements.requests": func(p *corev1.Pod) { c0(p).Resources.Requests = corev1.ResourceList{"hugepages-2Mi": q("4Mi")} },
	"EmptyDirVolumeSource.medium":   func(p *corev1.Pod) { p.Spec.Volumes[1].EmptyDir.Medium = corev1.StorageMediumHugePages },
	"PodSpec.os":                    func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} },
	"Container.stdin":               func(p *corev1.Pod) { c0(p).Stdin = true },
}

// Every other volume source is refused: its example is the source set to
// an empty value (`nfs: {}`), generated from VolumeSource's fields.
func init() {
	for _, f := range walkFields(reflect.TypeFor[corev1.Volume]()) {
		if _, ok := fieldExamples[f.key]; ok || f.typ.Kind() != reflect.Pointer {
			continue
		}
		fieldExamples[f.key] = func(p *corev1.Pod) {
			v := reflect.ValueOf(&p.Spec.Volumes[1]).Elem()
			v.FieldByIndex(f.index).Set(reflect.New(f.typ.Elem()))
			p.Spec.Volumes[1].EmptyDir = nil
			c0(p).VolumeMounts = nil
		}
	}
}

func hook(p *corev1.Pod) *corev1.Lifecycle {
	if c0(p).Lifecycle == nil {
		c0(p).Lifecycle = &corev1.Lifecycle{}
	}
	return c0(p).Lifecycle
}

func psc(p *corev1.Pod) *corev1.PodSecurityContext {
	if p.Spec.SecurityContext == nil {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	return p.Spec.SecurityContext
}

func csc(p *corev1.Pod) *corev1.SecurityContext {
	if c0(p).SecurityContext == nil {
		c0(p).SecurityContext = &corev1.SecurityContext{}
	}
	return c0(p).SecurityContext
}

func env(p *corev1.Pod, src *corev1.EnvVarSource) {
	c0(p).Env = []corev1.EnvVar{{Name: "V", ValueFrom: src}}
}

func tcpProbe() *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
}

func execHandler() corev1.ProbeHandler {
	return corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
}

func httpHandler() corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}
}

func grpcHandler() corev1.ProbeHandler {
	return corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}
}

// The table agrees with validation: a refused field is refused with "not
// supported by podhost" naming it, an honoured one is accepted.
func TestFieldAuditAgreesWithValidation(t *testing.T) {
	_, rows := readAuditTable(t)
	for _, r := range rows {
		if r.treatment == ignored || workloadRow(r.key) != "" { // workload rows: workload_fields_test.go
			continue
		}
		t.Run(r.key, func(t *testing.T) {
			mutate, ok := fieldExamples[r.key]
			if !ok {
				t.Fatalf("no example value for %s (%s): add one to fieldExamples", r.key, r.treatment)
			}
			_, err := decodePod(t, mutate)
			switch {
			case r.treatment == refused:
				assertRefused(t, r.key, err)
			case err != nil:
				t.Fatalf("honoured field %s refused: %v", r.key, err)
			}
		})
	}
	for key, mutate := range refusedValues {
		t.Run("value/"+key, func(t *testing.T) {
			_, err := decodePod(t, mutate)
			assertRefused(t, strings.Split(key, "#")[0], err)
		})
	}
}

func assertRefused(t *testing.T, key string, err error) {
	t.Helper()
	name := key[strings.Index(key, ".")+1:]
	if err == nil || !strings.Contains(err.Error(), notSupported) || !strings.Contains(err.Error(), name) {
		t.Fatalf("%s: want refused with %q naming %q, got %v", key, notSupported, name, err)
	}
}

// cmVol and secVol add a configMap / secret volume and return its source.
func cmVol(p *corev1.Pod) *corev1.ConfigMapVolumeSource {
	src := &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: src}})
	return src
}

func secVol(p *corev1.Pod) *corev1.SecretVolumeSource {
	src := &corev1.SecretVolumeSource{SecretName: "s"}
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: src}})
	return src
}
