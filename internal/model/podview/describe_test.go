package podview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kubectlPod has what the describe of issue 35 lacked: configMap, secret,
// downwardAPI and projected volumes, probes, env of every kind, a
// multi-line command, the node.
func kubectlPod(start time.Time) *corev1.Pod {
	yes := true
	mode := int32(0o400)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}}}
	p.Spec.NodeName = "box"
	p.Spec.Containers = []corev1.Container{{
		Name: "app", Image: "busybox",
		Command: []string{"sh", "-c", "echo start\nexec httpd -f"},
		Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}},
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("500m")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP}},
			TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}},
			InitialDelaySeconds: 5, TimeoutSeconds: 1, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 3},
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}},
			{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Optional: &yes}}},
		Env: []corev1.EnvVar{
			{Name: "MODE", Value: "prod"},
			{Name: "BANNER", Value: "line one\nline two"},
			{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
			{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "PASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}},
			{Name: "CONF", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "conf", Optional: &yes}}},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/www"}, {Name: "conf", MountPath: "/etc/app", ReadOnly: true, SubPath: "app"}},
	}}
	p.Spec.Volumes = []corev1.Volume{
		{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}},
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db", DefaultMode: &mode, Optional: &yes}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory"}}}}}},
		{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{}}}}}},
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "192.168.1.10", PodIP: "10.88.0.5", PodIPs: []corev1.PodIP{{IP: "10.88.0.5"}},
		StartTime: &metav1.Time{Time: start}, QOSClass: corev1.PodQOSBurstable,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, ContainerID: "containerd://abc", ImageID: "sha256:def",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: start}}}}}}
	return p
}

// describe pod in kubectl describe's layout (k8s.io/kubectl/pkg/describe
// describePod, ported), byte for byte: the node, the volume types podhost
// runs, probes, every kind of env var (a Secret's value never), a
// multi-line command and env value on lines of their own, an event seen
// several times as kubectl's "(xN over …)".
func TestDescribeAsKubectl(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := start.Add(time.Hour)
	events := []Event{{Time: now.Add(-3 * time.Minute), First: start, Count: 95, Type: "Warning", Reason: "Unhealthy", Message: "Readiness probe failed: cat: can't open '/tmp/ready'"}}
	var buf bytes.Buffer
	if err := Describe(&buf, kubectlPod(start), events, time.Time{}, now); err != nil {
		t.Fatal(err)
	}
	want := `Name:         web
Namespace:    default
Node:         box/192.168.1.10
Start Time:   Thu, 01 Jan 2026 12:00:00 +0000
Labels:       app=web
Annotations:  <none>
Status:       Running
IP:           10.88.0.5
IPs:
  IP:  10.88.0.5
Containers:
  app:
    Container ID:  containerd://abc
    Image:         busybox
    Image ID:      sha256:def
    Port:          80/TCP (http)
    Host Port:     8080/TCP (http)
    Command:
      sh
      -c
      echo start
      exec httpd -f
    State:          Running
      Started:      Thu, 01 Jan 2026 12:00:00 +0000
    Ready:          True
    Restart Count:  0
    Limits:
      cpu:     500m
      memory:  64Mi
    Requests:
      cpu:      100m
    Liveness:   http-get http://:80/healthz delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3
    Readiness:  exec [cat /tmp/ready] delay=5s timeout=1s period=5s successThreshold=1 failureThreshold=3
    Environment Variables from:
      app  ConfigMap                 Optional: false
      db   Secret with prefix 'DB_'  Optional: true
    Environment:
      MODE:    prod
      BANNER:  line one
               line two
      POD:     web (v1:metadata.name)
      IP:       (v1:status.podIP)
      MEM:     64 (limits.memory)
      PASS:    <set to the key 'password' in secret 'db'>   Optional: false
      CONF:    <set to the key 'conf' of config map 'app'>  Optional: true
    Mounts:
      /etc/app from conf (ro,path="app")
      /var/www from data (rw)
Conditions:
  Type    Status
  Ready   True 
Volumes:
  conf:
    Type:      ConfigMap (a volume populated by a ConfigMap)
    Name:      app
    Optional:  false
  creds:
    Type:        Secret (a volume populated by a Secret)
    SecretName:  db
    Optional:    true
  info:
    Type:  DownwardAPI (a volume populated by information about the pod)
    Items:
      metadata.labels -> labels
      limits.memory -> mem
  all:
    Type:           Projected (a volume that contains injected data from multiple sources)
    ConfigMapName:  app
    Optional:       false
    SecretName:     db
    Optional:       false
    DownwardAPI:    true
  data:
    Type:        EmptyDir (a temporary directory that shares a pod's lifetime)
    Medium:      
    SizeLimit:   <unset>
QoS Class:       Burstable
Node-Selectors:  <none>
Events:
  Type     Reason     Age                From     Message
  ----     ------     ----               ----     -------
  Warning  Unhealthy  3m (x95 over 60m)  kubelet  Readiness probe failed: cat: can't open '/tmp/ready'
`
	if got := buf.String(); got != want {
		t.Errorf("describe:\n%s\nwant:\n%s\nfirst difference: %s", got, want, firstDiff(got, want))
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return "line " + g[i] + " | want " + w[i]
		}
	}
	return "length"
}
