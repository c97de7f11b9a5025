package spec

import (
	"reflect"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "EMPTY": "", "B": "$(A)"}
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(A)", "xaya"},
		{"$(EMPTY)", ""},
		{"$(MISSING)", "$(MISSING)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$a"},
		{"$$", "$"},
		{"$", "$"},
		{"a$", "a$"},
		{"$A", "$A"},
		{"$(A", "$(A"},
		{"$()", "$()"},
		{"$(B)", "$(A)"}, // no recursive expansion
		{"${A}", "${A}"},
	}
	for _, tt := range tests {
		if got := Expand(tt.in, lookupIn(vars)); got != tt.want {
			t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCommand(t *testing.T) {
	img := ocispec.ImageConfig{Entrypoint: []string{"/entry"}, Cmd: []string{"cmd", "arg"}}
	env := []corev1.EnvVar{{Name: "NAME", Value: "world"}}
	tests := []struct {
		name    string
		command []string
		args    []string
		img     ocispec.ImageConfig
		want    []string
		wantErr bool
	}{
		{name: "image defaults", img: img, want: []string{"/entry", "cmd", "arg"}},
		{name: "command drops cmd", command: []string{"/bin/sh"}, img: img, want: []string{"/bin/sh"}},
		{name: "command and args", command: []string{"/bin/echo"}, args: []string{"hi"}, img: img, want: []string{"/bin/echo", "hi"}},
		{name: "args replace cmd", args: []string{"x"}, img: img, want: []string{"/entry", "x"}},
		{name: "empty entrypoint string ignored", img: ocispec.ImageConfig{Entrypoint: []string{""}, Cmd: []string{"c"}}, want: []string{"c"}},
		{name: "no entrypoint", img: ocispec.ImageConfig{Cmd: []string{"c"}}, want: []string{"c"}},
		{name: "expansion", command: []string{"echo", "$(NAME)"}, args: []string{"$$(NAME)", "$(NOPE)"}, img: img,
			want: []string{"echo", "world", "$(NAME)", "$(NOPE)"}},
		{name: "nothing", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &corev1.Container{Command: tt.command, Args: tt.args}
			got, err := Command(c, tt.img, env)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Command = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestResolveEnv(t *testing.T) {
	optional := true
	p := testPod()
	p.PodIPs = []string{"10.0.0.5", "fd00::5"}
	p.HostIP = "192.168.1.2"
	p.Host.Hostname, p.Host.NodeName = "Node1", "node1"
	p.Pod.Spec.NodeName = "elsewhere" // the manifest's nodeName is not the node's: ignored, as the kubelet
	p.Host.Allocatable = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")}
	c := &corev1.Container{Name: "app", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
	}}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	res := func(r, div string) *corev1.EnvVarSource {
		s := &corev1.ResourceFieldSelector{Resource: r}
		if div != "" {
			s.Divisor = resource.MustParse(div)
		}
		return &corev1.EnvVarSource{ResourceFieldRef: s}
	}
	c.Env = []corev1.EnvVar{
		{Name: "A", Value: "1"},
		{Name: "B", Value: "$(A)-$(C)"}, // C is defined later: stays literal
		{Name: "C", Value: "3"},
		{Name: "A", Value: "$(A)$(A)"}, // redefinition keeps A's position
		{Name: "POD", ValueFrom: field("metadata.name")},
		{Name: "NS", ValueFrom: field("metadata.namespace")},
		{Name: "UID", ValueFrom: field("metadata.uid")},
		{Name: "NODE", ValueFrom: field("spec.nodeName")},
		{Name: "IP", ValueFrom: field("status.podIP")},
		{Name: "IPS", ValueFrom: field("status.podIPs")},
		{Name: "HOSTIP", ValueFrom: field("status.hostIP")},
		{Name: "LABEL", ValueFrom: field("metadata.labels['app']")},
		{Name: "LITERAL", ValueFrom: field("metadata.name")},
		{Name: "CPU_REQ_M", ValueFrom: res("requests.cpu", "1m")},
		{Name: "CPU_LIM", ValueFrom: res("limits.cpu", "")},
		{Name: "MEM_LIM_MI", ValueFrom: res("limits.memory", "1Mi")},
		{Name: "OPT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k", Optional: &optional}}},
	}
	got, err := ResolveEnv(p, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"A=11", "B=1-$(C)", "C=3", "POD=web", "NS=default", "UID=uid-1", "NODE=node1",
		"IP=10.0.0.5", "IPS=10.0.0.5,fd00::5", "HOSTIP=192.168.1.2", "LABEL=web", "LITERAL=web",
		"CPU_REQ_M=250", "CPU_LIM=2", "MEM_LIM_MI=8192",
	}
	if s := envStrings(got); !reflect.DeepEqual(s, want) {
		t.Errorf("ResolveEnv =\n%q\nwant\n%q", s, want)
	}
}

// A hostNetwork pod's status.podIP(s) is the host IP, as its status shows,
// even when the sandbox reports no IP of its own.
func TestResolveEnvHostNetworkPodIP(t *testing.T) {
	p := testPod()
	p.PodIPs = nil
	p.HostIP = "192.168.1.2"
	p.Pod.Spec.HostNetwork = true
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	c := &corev1.Container{Name: "app", Env: []corev1.EnvVar{
		{Name: "IP", ValueFrom: field("status.podIP")},
		{Name: "IPS", ValueFrom: field("status.podIPs")},
	}}
	got, err := ResolveEnv(p, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"IP=192.168.1.2", "IPS=192.168.1.2"}
	if s := envStrings(got); !reflect.DeepEqual(s, want) {
		t.Errorf("ResolveEnv = %q, want %q", s, want)
	}
}

func TestResolveEnvErrors(t *testing.T) {
	p := testPod()
	tests := map[string]corev1.Container{
		"configmap envFrom": {EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}},
		"secret key": {Env: []corev1.EnvVar{{Name: "S", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}},
		"bad field": {Env: []corev1.EnvVar{{Name: "F", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.bogus"}}}}},
	}
	for name, c := range tests {
		if _, err := ResolveEnv(p, &c); err == nil {
			t.Errorf("%s: want error", name)
		}
	}
}

func TestEnvMerge(t *testing.T) {
	p := testPod()
	c := Container{
		Container: &corev1.Container{Name: "app", Env: []corev1.EnvVar{{Name: "LANG", Value: "C"}, {Name: "X", Value: "$(LANG)"}}},
		Image:     ocispec.ImageConfig{Env: []string{"PATH=/img/bin", "LANG=en", "IMG=1"}},
	}
	got, err := Env(p, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PATH=/img/bin", "HOSTNAME=web", "LANG=C", "IMG=1", "X=C"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Env = %q, want %q", got, want)
	}
}

func envStrings(env []corev1.EnvVar) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}

func TestHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	override := "over"
	tests := []struct {
		pod  corev1.Pod
		want string
	}{
		{corev1.Pod{}, ""},
		{podNamed("web"), "web"},
		{podNamed(long), strings.Repeat("a", 62)},
		{func() corev1.Pod { p := podNamed("web"); p.Spec.Hostname = "h"; return p }(), "h"},
		{func() corev1.Pod {
			p := podNamed("web")
			p.Spec.Hostname = "h"
			p.Spec.HostnameOverride = &override
			return p
		}(), "over"},
	}
	for _, tt := range tests {
		if got := Hostname(&tt.pod); got != tt.want {
			t.Errorf("Hostname(%q) = %q, want %q", tt.pod.Name, got, tt.want)
		}
	}
}

func podNamed(name string) corev1.Pod {
	var p corev1.Pod
	p.Name = name
	return p
}

// subPathExpr expands as the kubelet's ExpandContainerVolumeMounts: from
// the container's environment; a missing or empty variable is an error.
func TestExpandSubPathExpr(t *testing.T) {
	env := []corev1.EnvVar{{Name: "POD", Value: "web-1"}, {Name: "NS", Value: "prod"}, {Name: "EMPTY"}}
	for _, tc := range []struct{ expr, want, err string }{
		{expr: "$(NS)/$(POD)", want: "prod/web-1"},
		{expr: "logs", want: "logs"},
		{expr: "$$(POD)", want: "$(POD)"},
		{expr: "$(NOPE)/$(EMPTY)/$(NOPE)", err: `subPathExpr "$(NOPE)/$(EMPTY)/$(NOPE)": missing value for EMPTY, NOPE`},
	} {
		got, err := expandSubPathExpr(tc.expr, env)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: %q, %v; want error %q", tc.expr, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.expr, got, err, tc.want)
		}
	}
}

// The namespace's service links come first (env overrides them, $(VAR)
// sees them) unless the pod sets enableServiceLinks: false.
func TestResolveEnvServiceLinks(t *testing.T) {
	p := testPod()
	p.ServiceEnv = []corev1.EnvVar{{Name: "DB_SERVICE_HOST", Value: "10.96.0.11"}, {Name: "DB_SERVICE_PORT", Value: "5432"}}
	c := &corev1.Container{Name: "app", Env: []corev1.EnvVar{
		{Name: "URL", Value: "pg://$(DB_SERVICE_HOST):$(DB_SERVICE_PORT)"},
		{Name: "DB_SERVICE_PORT", Value: "6432"},
	}}
	got, err := ResolveEnv(p, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DB_SERVICE_HOST=10.96.0.11", "DB_SERVICE_PORT=6432", "URL=pg://10.96.0.11:5432"}
	if s := envStrings(got); !reflect.DeepEqual(s, want) {
		t.Errorf("ResolveEnv = %q, want %q", s, want)
	}
	off := false
	p.Pod.Spec.EnableServiceLinks = &off
	got, _ = ResolveEnv(p, c)
	if s := envStrings(got); !reflect.DeepEqual(s, []string{"URL=pg://$(DB_SERVICE_HOST):$(DB_SERVICE_PORT)", "DB_SERVICE_PORT=6432"}) {
		t.Errorf("enableServiceLinks: false: %q", s)
	}
	p.ServiceEnvFinal = true // the cluster's variables, enableServiceLinks applied by podhost-cluster
	got, _ = ResolveEnv(p, c)
	if s := envStrings(got); !reflect.DeepEqual(s, want) {
		t.Errorf("the cluster's variables with enableServiceLinks: false: %q, want %q", s, want)
	}
}
