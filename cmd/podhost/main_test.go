package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/config"
)

const goodPod = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: main
    image: busybox
`

// testEnv is a hermetic podhost setup: an empty config file, a manifest dir
// with one pod, and a dir for inputs.
type testEnv struct {
	config, manifests, inputs string
}

func newTestEnv(t *testing.T) testEnv {
	t.Helper()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	e := testEnv{
		config:    filepath.Join(root, "config.yaml"),
		manifests: filepath.Join(root, "manifests"),
		inputs:    filepath.Join(root, "in"),
	}
	for _, d := range []string{e.manifests, e.inputs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(e.config, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.manifests, "web.yaml"), []byte(goodPod), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// podhost runs the CLI in process with the env's config and manifest dir.
func (e testEnv) podhost(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	all := append([]string{"--config", e.config, "--manifest-dir", e.manifests}, args...)
	code = run(context.Background(), all, cmdutil.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

func (e testEnv) input(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(e.inputs, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// snapshot returns every file of dir with its bytes and mode.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		data, err := os.ReadFile(filepath.Join(dir, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		info, _ := en.Info()
		out[en.Name()] = info.Mode().String() + "\n" + string(data)
	}
	return out
}

func pod(meta, spec string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: " + meta + "\nspec: " + spec + "\n"
}

func yamlBomb() string {
	var b strings.Builder
	b.WriteString(`a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	prev := "a"
	for _, c := range "bcdefghi" {
		refs := strings.Repeat("*"+prev+",", 8) + "*" + prev
		b.WriteString(string(c) + ": &" + string(c) + " [" + refs + "]\n")
		prev = string(c)
	}
	return b.String()
}

func TestApplyBadManifests(t *testing.T) {
	garbage := bytes.Repeat([]byte("\x00\xffgarbage"), 10<<20/9+1)
	tests := []struct {
		name string
		data []byte
		want string // after "Error: <file>: "
	}{
		{"unknown-field", []byte(pod("{name: web}", "{containers: [{name: c, image: busybox, imagePullPolice: Always}]}")),
			"spec.containers[0].imagePullPolice: unknown field"},
		{"name-slash", []byte(pod("{name: a/b}", "{containers: [{name: c, image: busybox}]}")), `metadata.name: Invalid value: "a/b"`},
		{"name-dotdot", []byte(pod("{name: ..}", "{containers: [{name: c, image: busybox}]}")), `metadata.name: Invalid value: ".."`},
		{"dup-containers", []byte(pod("{name: web}", "{containers: [{name: c, image: busybox}, {name: c, image: busybox}]}")),
			`spec.containers[1].name: Duplicate value: "c"`},
		{"volume-type", []byte(pod("{name: web}", "{containers: [{name: c, image: busybox}], volumes: [{name: v, nfs: {server: nas, path: /x}}]}")),
			`spec.volumes[0].nfs: Unsupported value`},
		{"limits-below-requests", []byte(pod("{name: web}", "{containers: [{name: c, image: busybox, resources: {requests: {memory: 200Mi}, limits: {memory: 100Mi}}}]}")),
			`spec.containers[0].resources.requests[memory]: Invalid value`},
		{"deletion-timestamp", []byte(pod(`{name: web, deletionTimestamp: "2024-01-01T00:00:00Z"}`, "{containers: [{name: c, image: busybox}]}")),
			"metadata.deletionTimestamp: Forbidden: metadata.deletionTimestamp (delete the manifest file instead) is not supported by podhost"},
		{"deletion-grace", []byte(pod(`{name: web, deletionGracePeriodSeconds: 0}`, "{containers: [{name: c, image: busybox}]}")),
			"metadata.deletionGracePeriodSeconds: Forbidden"},
		{"readiness-gates", []byte(pod("{name: web}", "{readinessGates: [{conditionType: x/ready}], containers: [{name: c, image: busybox}]}")),
			"spec.readinessGates: Forbidden: readinessGates (no controller sets their conditions) are not supported by podhost"},
		{"image-pull-secrets", []byte(pod("{name: web}", "{imagePullSecrets: [{name: Reg_Cred}], containers: [{name: c, image: busybox}]}")),
			`spec.imagePullSecrets[0].name: Invalid value: "Reg_Cred"`},
		{"secret-base64", []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {pw: \"not*base64\"}\n"),
			"data[pw]: Invalid value: not valid base64 (value not shown; use stringData for plain text)"},
		{"configmap-key-slash", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a/b: x}\n"),
			`data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric characters`},
		{"configmap-over-1mib", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: " + strings.Repeat("x", 1<<20) + "}\n"),
			"file is 1048639 bytes, more than the 1048576-byte limit for a manifest"},
		{"proc-mount-unmasked", []byte(pod("{name: web}", "{containers: [{name: c, image: busybox, securityContext: {procMount: Unmasked}}]}")),
			`spec.containers[0].securityContext.procMount: Unsupported value: "Unmasked": not supported by podhost`},
		{"host-sysctl", []byte(pod("{name: web}", "{securityContext: {sysctls: [{name: kernel.panic, value: \"1\"}]}, containers: [{name: c, image: busybox}]}")),
			`spec.securityContext.sysctls[0].name: Unsupported value: "kernel.panic": not supported by podhost`},
		{"net-sysctl-host-network", []byte(pod("{name: web}", "{hostNetwork: true, securityContext: {sysctls: [{name: net.core.somaxconn, value: \"1\"}]}, containers: [{name: c, image: busybox}]}")),
			`spec.securityContext.sysctls[0].name: Unsupported value: "net.core.somaxconn": not supported by podhost`},
		{"recursive-read-only", []byte(pod("{name: web}", "{volumes: [{name: v, emptyDir: {}}], containers: [{name: c, image: busybox, volumeMounts: [{name: v, mountPath: /v, recursiveReadOnly: Enabled}]}]}")),
			`spec.containers[0].volumeMounts[0].recursiveReadOnly: Forbidden: may only be specified when readOnly is true`},
		{"hugepages", []byte(pod("{name: web}", "{containers: [{name: c, image: busybox, resources: {limits: {hugepages-2Mi: 4Mi, memory: 1Gi}}}]}")),
			`spec.containers[0].resources.limits[hugepages-2Mi]: Unsupported value: "hugepages-2Mi": not supported by podhost`},
		{"selinux", []byte(pod("{name: web}", "{securityContext: {seLinuxOptions: {level: s0}}, containers: [{name: c, image: busybox}]}")),
			"spec.securityContext.seLinuxOptions: Forbidden: seLinuxOptions (SELinux labels) are not supported by podhost"},
		{"stdin", []byte(pod("{name: web}", "{containers: [{name: c, image: busybox, stdin: true}]}")),
			"spec.containers[0].stdin: Forbidden: stdin without tty is not supported by podhost"},
		{"garbage-10mb", garbage, "file is "},
		{"invalid-utf8", []byte(pod("{name: \"w\xffeb\"}", "{containers: [{name: c, image: busybox}]}")), "invalid UTF-8 at line 3"},
		{"yaml-bomb", []byte(yamlBomb()), "yaml: "},
		{"init-restart-onfailure", []byte(pod("{name: web}", "{initContainers: [{name: i, image: busybox, restartPolicy: OnFailure}], containers: [{name: c, image: busybox}]}")),
			`spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported values: "Always"`},
		{"container-restart-policy", []byte(pod("{name: web}", "{containers: [{name: c, image: busybox, restartPolicy: Always}]}")),
			"spec.containers[0].restartPolicy: Forbidden: a restartPolicy on a regular container (container restart rules) is not supported by podhost"},
		{"init-probe", []byte(pod("{name: web}", "{initContainers: [{name: i, image: busybox, startupProbe: {exec: {command: [\"true\"]}}}], containers: [{name: c, image: busybox}]}")),
			"spec.initContainers[0].startupProbe: Forbidden: may not be set for init containers without restartPolicy=Always"},
		{"hook-no-handler", []byte(pod("{name: web}", "{containers: [{name: c, image: busybox, lifecycle: {preStop: {}}}]}")),
			"spec.containers[0].lifecycle.preStop: Required value: must specify a handler type"},
		{"hook-two-handlers", []byte(pod("{name: web}", "{containers: [{name: c, image: busybox, lifecycle: {postStart: {exec: {command: [\"true\"]}, sleep: {seconds: 1}}}}]}")),
			"spec.containers[0].lifecycle.postStart.sleep: Forbidden: may not specify more than 1 handler type"},
		{"hook-tcpsocket", []byte(pod("{name: web}", "{containers: [{name: c, image: busybox, lifecycle: {preStop: {tcpSocket: {port: 80}}}}]}")),
			"spec.containers[0].lifecycle.preStop.tcpSocket: Forbidden: not supported by podhost in a lifecycle hook"},
		{"hook-negative-sleep", []byte(pod("{name: web}", "{containers: [{name: c, image: busybox, lifecycle: {preStop: {sleep: {seconds: -1}}}}]}")),
			"spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: -1: must be greater than or equal to 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			file := e.input(t, tt.name+".yaml", tt.data)
			good := e.input(t, "good.yaml", []byte(strings.ReplaceAll(goodPod, "web", "other")))
			before := snapshot(t, e.manifests)
			done := make(chan struct{})
			var code int
			var stdout, stderr string
			go func() {
				defer close(done)
				code, stdout, stderr = e.podhost(t, "", "apply", "-f", good, "-f", file)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("apply hangs")
			}
			if code != 1 {
				t.Errorf("exit code = %d, want 1", code)
			}
			wantPrefix := "Error: " + tt.name + ".yaml: " + tt.want
			if lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], wantPrefix) {
				t.Errorf("stderr = %q, want one line starting with %q", stderr, wantPrefix)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			if after := snapshot(t, e.manifests); !reflect.DeepEqual(before, after) {
				t.Errorf("manifest dir changed:\n%q\n%q", before, after)
			}
		})
	}
}

func TestApplyDuplicateInputs(t *testing.T) {
	e := newTestEnv(t)
	a := e.input(t, "a.yaml", []byte(strings.ReplaceAll(goodPod, "web", "dup")))
	b := e.input(t, "b.yaml", []byte(strings.ReplaceAll(strings.ReplaceAll(goodPod, "web", "dup"), "busybox", "alpine")))
	before := snapshot(t, e.manifests)
	code, _, stderr := e.podhost(t, "", "apply", "-f", a, "-f", b)
	want := `Error: b.yaml: metadata.name: Duplicate value: "dup": pod default/dup is already defined in a.yaml` + "\n"
	if code != 1 || stderr != want {
		t.Errorf("code %d, stderr %q, want %q", code, stderr, want)
	}
	if after := snapshot(t, e.manifests); !reflect.DeepEqual(before, after) {
		t.Error("manifest dir changed")
	}
}

func TestApplyDeleteRoundTrip(t *testing.T) {
	e := newTestEnv(t)
	in := e.input(t, "api.yaml", []byte(strings.ReplaceAll(goodPod, "web", "api")))
	steps := []struct {
		stdin            string
		args             []string
		code             int
		stdout, stderrIn string
	}{
		{"", []string{"apply", "-f", in}, 0, "pod/api created\n", ""},
		{"", []string{"apply", "-f", in}, 0, "pod/api unchanged\n", ""},
		{strings.ReplaceAll(goodPod, "busybox", "alpine"), []string{"apply", "-f", "-"}, 0, "pod/web replaced\n", ""},
		{"", []string{"apply", "-f", in, "--dry-run"}, 0, "pod/api unchanged (dry run)\n", ""},
		{"", []string{"delete", "api"}, 0, "pod \"api\" deleted\n", ""},
		{"", []string{"delete", "api"}, 1, "", "Error from server (NotFound): pods \"api\" not found\n"},
		{"", []string{"delete", "api", "--ignore-not-found"}, 0, "", ""},
		{"", []string{"delete", "-f", filepath.Join(e.manifests, "web.yaml")}, 0, "pod \"web\" deleted\n", ""},
		{"", []string{"apply"}, 1, "", "Error: required flag(s) \"filename\" not set"},
		{"", []string{"apply", "-f", in, "--bogus"}, 1, "", "Error: unknown flag: --bogus"},
	}
	for i, s := range steps {
		code, stdout, stderr := e.podhost(t, s.stdin, s.args...)
		if code != s.code || stdout != s.stdout || !strings.Contains(stderr, s.stderrIn) {
			t.Errorf("step %d %v: code %d stdout %q stderr %q; want %d %q %q", i, s.args, code, stdout, stderr, s.code, s.stdout, s.stderrIn)
		}
	}
	if got := snapshot(t, e.manifests); len(got) != 0 {
		t.Errorf("manifest dir not empty: %v", got)
	}
}

// TestApplyWaitConfigMapOnly: --wait with no pod in the input has nothing
// to wait for (it used to dereference the nil pod of a ConfigMap result).
func TestApplyWaitConfigMapOnly(t *testing.T) {
	e := newTestEnv(t)
	in := e.input(t, "cm.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: v\n"))
	code, stdout, stderr := e.podhost(t, "", "apply", "-f", in, "--wait=1s")
	if code != 0 || stdout != "configmap/cfg created\n" {
		t.Fatalf("code %d stdout %q stderr %q; want 0 and the configmap created", code, stdout, stderr)
	}
}

func TestMissingExplicitConfig(t *testing.T) {
	e := newTestEnv(t)
	e.config = filepath.Join(e.inputs, "nope.yaml")
	code, _, stderr := e.podhost(t, "", "delete", "web")
	if code != 1 || !strings.HasPrefix(stderr, "Error: config: open ") {
		t.Errorf("code %d stderr %q", code, stderr)
	}
}

func TestVersionAndCompletion(t *testing.T) {
	e := newTestEnv(t)
	code, stdout, _ := e.podhost(t, "", "version", "-o", "json")
	var v map[string]string
	if code != 0 || json.Unmarshal([]byte(stdout), &v) != nil || v["version"] == "" {
		t.Errorf("version: %d %q", code, stdout)
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if code, stdout, _ := e.podhost(t, "", "completion", shell); code != 0 || !strings.Contains(stdout, "podhost") {
			t.Errorf("completion %s: code %d", shell, code)
		}
	}
}

func TestApplyWaitFlag(t *testing.T) {
	tests := map[string]string{"": "0s", "--wait": "2m0s", "--wait=30s": "30s"}
	for arg, want := range tests {
		g := &globalOptions{flags: config.Default()}
		cmd := newApplyCmd(g)
		args := []string{"-f", "x.yaml"}
		if arg != "" {
			args = append(args, arg)
		}
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		if got := cmd.Flags().Lookup("wait").Value.String(); got != want {
			t.Errorf("%q: wait = %s, want %s", arg, got, want)
		}
	}
}

// The commands that take pod names complete them (the manifest dir's, in
// -n's namespace), as kubectl's do; get and describe the type first; a name
// given is not offered again, exec's command and logs' second argument are
// no pod names.
func TestPodNameCompletion(t *testing.T) {
	e := newTestEnv(t)
	other := strings.Replace(goodPod, "name: web", "name: db\n  namespace: infra", 1)
	if err := os.WriteFile(filepath.Join(e.manifests, "db.yaml"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string // the names, one a line
	}{
		{[]string{"delete", ""}, "web"},
		{[]string{"delete", "web", ""}, ""},
		{[]string{"delete", "-n", "infra", ""}, "db"},
		{[]string{"logs", ""}, "web"},
		{[]string{"logs", "web", ""}, ""},
		{[]string{"exec", ""}, "web"},
		{[]string{"exec", "-n", "infra", ""}, "db"},
		{[]string{"get", ""}, "pods nodes configmaps secrets"},
		{[]string{"get", "pods", ""}, "web"},
		{[]string{"get", "po", "-n", "infra", ""}, "db"},
		{[]string{"get", "configmaps", ""}, ""},
		{[]string{"describe", "pod", ""}, "web"},
	} {
		code, stdout, _ := e.podhost(t, "", append([]string{"__complete"}, c.args...)...)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		got := strings.Join(lines[:len(lines)-1], " ") // the last line is cobra's directive
		if code != 0 || got != c.want {
			t.Errorf("complete %q: %d %q, want %q", c.args, code, got, c.want)
		}
	}
}
