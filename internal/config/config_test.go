package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    func(c *Config)
		wantErr string
	}{
		{name: "empty file gives defaults", yaml: "", want: func(*Config) {}},
		{name: "comments only", yaml: "# nothing\n", want: func(*Config) {}},
		{
			name: "all keys",
			yaml: `
manifestDir: /m
stateDir: /s
logDir: /l
runDir: /r
socket: /r/p.sock
containerdAddress: /c.sock
namespace: ns
cniConfDir: /cni
cniBinDirs: [/b1, /b2]
cgroupDriver: systemd
resyncPeriod: 30s
relistPeriod: 5s
systemReserved: {cpu: 500m, memory: 256Mi}
allowInsecureManifests: true
logMaxSize: 5Mi
logMaxFiles: 3
shutdownGracePeriod: 30s
shutdownGracePeriodCriticalPods: 10s
rollbackAfter: 2m
`,
			want: func(c *Config) {
				c.ManifestDir, c.StateDir, c.LogDir, c.RunDir = "/m", "/s", "/l", "/r"
				c.Socket, c.ContainerdAddress, c.Namespace = "/r/p.sock", "/c.sock", "ns"
				c.CgroupParent = "podhost-ns" // follows the namespace
				c.CNIConfDir, c.CNIBinDirs, c.CgroupDriver = "/cni", []string{"/b1", "/b2"}, "systemd"
				c.ResyncPeriod, c.RelistPeriod = 30*time.Second, 5*time.Second
				c.SystemReserved = corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("500m"),
					corev1.ResourceMemory: resource.MustParse("256Mi"),
				}
				c.AllowInsecureManifests, c.LogMaxSize, c.LogMaxFiles = true, 5<<20, 3
				c.ShutdownGracePeriod, c.ShutdownGracePeriodCriticalPods = 30*time.Second, 10*time.Second
				c.RollbackAfter = 2 * time.Minute
			},
		},
		{name: "unknown key", yaml: "manifestDirs: /x\n", wantErr: `unknown field "manifestDirs"`},
		{name: "wrong type", yaml: "logMaxFiles: many\n", wantErr: "logMaxFiles"},
		{name: "bad duration", yaml: "resyncPeriod: 1 minute\n", wantErr: "resyncPeriod"},
		{name: "negative duration", yaml: "relistPeriod: -1s\n", wantErr: "relistPeriod: must be positive"},
		{name: "negative rollback window", yaml: "rollbackAfter: -1s\n", wantErr: "rollbackAfter: must not be negative"},
		{name: "critical shutdown period beyond the total", yaml: "shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n",
			wantErr: "shutdownGracePeriodCriticalPods (20s): must not exceed shutdownGracePeriod (10s)"},
		{name: "bad cgroup driver", yaml: "cgroupDriver: cgroupv2\n", wantErr: `cgroupDriver: unsupported value "cgroupv2"`},
		{name: "relative path", yaml: "stateDir: var/lib\n", wantErr: "stateDir: must be an absolute path"},
		{name: "bad reserved resource", yaml: "systemReserved: {gpu: 1}\n", wantErr: "systemReserved.gpu"},
		{name: "eviction signal", yaml: "evictionHard: {pid.available: 10%}\n", wantErr: "evictionHard.pid.available: unsupported eviction signal"},
		{name: "eviction value", yaml: "evictionHard: {memory.available: lots}\n", wantErr: `evictionHard.memory.available: must be a quantity >= 0 or a percentage, got "lots"`},
		{name: "eviction percentage", yaml: "evictionHard: {nodefs.available: 110%}\n", wantErr: "evictionHard.nodefs.available: must be a percentage between 0% and 100%"},
		{name: "soft without grace", yaml: "evictionSoft: {memory.available: 1Gi}\n", wantErr: "evictionSoft.memory.available: grace period must be specified"},
		{name: "grace without soft", yaml: "evictionSoftGracePeriod: {memory.available: 1m}\n", wantErr: "evictionSoftGracePeriod.memory.available: no evictionSoft threshold"},
		{name: "eviction period", yaml: "evictionMonitoringPeriod: 10ms\n", wantErr: "evictionMonitoringPeriod: must be at least 1s"},
		{name: "bad reserved quantity", yaml: "systemReserved: {memory: lots}\n", wantErr: "systemReserved.memory"},
		{name: "negative reserved quantity", yaml: "systemReserved: {memory: -1Gi}\n", wantErr: "systemReserved.memory: -1Gi is negative"},
		{name: "empty bin dirs", yaml: "cniBinDirs: []\n", wantErr: "cniBinDirs: must not be empty"},
		{name: "not yaml", yaml: "{{{", wantErr: "yaml"},
		{name: "disk keys", yaml: "logDirMaxSize: 1Gi\nimageFSPath: /ctr\nimageGCHighThresholdPercent: 2\nimageGCLowThresholdPercent: 1\n",
			want: func(c *Config) {
				c.LogDirMaxSize, c.ImageFSPath, c.ImageGCHighThresholdPercent, c.ImageGCLowThresholdPercent = 1<<30, "/ctr", 2, 1
			}},
		{name: "image gc low above high", yaml: "imageGCHighThresholdPercent: 50\nimageGCLowThresholdPercent: 60\n", wantErr: "must not exceed"},
		{name: "image gc threshold range", yaml: "imageGCHighThresholdPercent: 101\n", wantErr: "imageGCHighThresholdPercent: must be in [0, 100]"},
		{name: "metrics address", yaml: "metricsAddress: 127.0.0.1:9101\n", want: func(c *Config) { c.MetricsAddress = "127.0.0.1:9101" }},
		{name: "cluster domain", yaml: "clusterDomain: cluster.local\n", want: func(c *Config) { c.ClusterDomain = "cluster.local" }},
		{name: "bad cluster domain", yaml: "clusterDomain: Cluster_Local\n", wantErr: "clusterDomain: \"Cluster_Local\""},
		{name: "seccompDefault off", yaml: "seccompDefault: false\n", want: func(c *Config) { c.SeccompDefault = false }},
		{name: "podSecurity", yaml: "podSecurity: {manifestURL: {level: restricted, allowedHostPaths: [/srv/data]}}\n", want: func(c *Config) {
			c.PodSecurity.ManifestURL = PodSecurityPolicy{Level: "restricted", AllowedHostPaths: []string{"/srv/data"}}
		}},
		{name: "podSecurity bad level", yaml: "podSecurity: {manifestDir: {level: strict}}\n", wantErr: "podSecurity.manifestDir.level: must be one of privileged, baseline, restricted"},
		{name: "podSecurity relative path", yaml: "podSecurity: {manifestURL: {allowedHostPaths: [data]}}\n", wantErr: "podSecurity.manifestURL.allowedHostPaths[0]: must be an absolute path"},
		{name: "imagePolicy", yaml: "imagePolicy: {requireSignatures: true, keys: [/k.pub], images: [r.example.com/vendor, \"127.0.0.1:5000\"]}\n", want: func(c *Config) {
			c.ImagePolicy = ImagePolicy{RequireSignatures: true, Keys: []string{"/k.pub"}, Images: []string{"r.example.com/vendor", "127.0.0.1:5000"}}
		}},
		{name: "imagePolicy without keys", yaml: "imagePolicy: {requireSignatures: true}\n", wantErr: "imagePolicy.keys: requireSignatures needs at least one public key file"},
		{name: "imagePolicy relative key", yaml: "imagePolicy: {keys: [k.pub]}\n", wantErr: "imagePolicy.keys[0]: must be an absolute path"},
		{name: "imagePolicy tagged scope", yaml: "imagePolicy: {images: [r.example.com/app:1]}\n", wantErr: "imagePolicy.images[0]: \"r.example.com/app:1\": a scope names no tag"},
		{name: "imagePolicy bare name scope", yaml: "imagePolicy: {images: [busybox]}\n", wantErr: "imagePolicy.images[0]: \"busybox\": a lone name must be a registry host"},
		{name: "imagePolicy unknown key", yaml: "imagePolicy: {key: /k.pub}\n", wantErr: "key"},
		{name: "podSecurity unknown source", yaml: "podSecurity: {manifestFiles: {level: baseline}}\n", wantErr: "manifestFiles"},
		{name: "bad metrics address", yaml: "metricsAddress: 9101\n", wantErr: "metricsAddress: want host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.yaml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Default()
			tt.want(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(good, []byte("namespace: other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(good)
	if err != nil || c.Namespace != "other" {
		t.Fatalf("Load(good) = %+v, %v", c, err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Fatal("missing explicit config: want error")
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("big config: err = %v", err)
	}
}

func TestResolveFlagsWin(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	body := "stateDir: /file/state\nlogDir: /file/logs\ncniBinDirs: [/file/bin]\nresyncPeriod: 5m\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, c *Config)
	}{
		{"file only", nil, func(t *testing.T, c *Config) {
			want := []any{"/file/state", "/file/logs", []string{"/file/bin"}, 5 * time.Minute, DefaultSocket}
			got := []any{c.StateDir, c.LogDir, c.CNIBinDirs, c.ResyncPeriod, c.Socket}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		}},
		{"flags win", []string{"--state-dir=/flag/state", "--socket", "/s.sock", "--resync-period=10s"}, func(t *testing.T, c *Config) {
			if c.StateDir != "/flag/state" || c.Socket != "/s.sock" || c.ResyncPeriod != 10*time.Second || c.LogDir != "/file/logs" {
				t.Errorf("got %+v", c)
			}
		}},
		{"bin dirs repeat and comma", []string{"--cni-bin-dir=/a,/b", "--cni-bin-dir", "/c"}, func(t *testing.T, c *Config) {
			if !reflect.DeepEqual(c.CNIBinDirs, []string{"/a", "/b", "/c"}) {
				t.Errorf("CNIBinDirs = %v", c.CNIBinDirs)
			}
		}},
		{"flag equal to default still wins", []string{"--log-dir", DefaultLogDir}, func(t *testing.T, c *Config) {
			if c.LogDir != DefaultLogDir {
				t.Errorf("LogDir = %q", c.LogDir)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			flags := Default()
			var cfgPath string
			flags.BindGlobalFlags(fs, &cfgPath)
			flags.BindDaemonFlags(fs)
			if err := fs.Parse(append([]string{"--config", path}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			c, err := Resolve(cfgPath, flags, fs)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestResolveValidatesFlags(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	flags := Default()
	var cfgPath string
	flags.BindGlobalFlags(fs, &cfgPath)
	flags.BindDaemonFlags(fs)
	if err := fs.Parse([]string{"--config", "/nonexistent/podhost.yaml"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(cfgPath, flags, fs); err == nil {
		t.Fatal("missing explicit --config: want error")
	}
	fs2 := pflag.NewFlagSet("test", pflag.ContinueOnError)
	flags2 := Default()
	flags2.BindDaemonFlags(fs2)
	if err := fs2.Parse([]string{"--cgroup-driver=nope"}); err != nil {
		t.Fatal(err)
	}
	// Resolve with the default path: the file may or may not exist on the
	// host; only check that a bad flag value is rejected when it does not.
	c, err := Load(filepath.Join(t.TempDir(), "none")) // explicit missing → error
	if err == nil {
		t.Fatalf("Load missing = %+v", c)
	}
	d := Default()
	d.MergeFlags(flags2, fs2)
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "cgroupDriver") {
		t.Fatalf("Validate = %v", err)
	}
}

func TestSystemReservedFlag(t *testing.T) {
	flags := Default()
	fs := pflag.NewFlagSet("daemon", pflag.ContinueOnError)
	flags.BindDaemonFlags(fs)
	if err := fs.Parse([]string{"--system-reserved", "cpu=500m,memory=512Mi"}); err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.MergeFlags(flags, fs)
	if cpu := c.SystemReserved[corev1.ResourceCPU]; cpu.MilliValue() != 500 {
		t.Fatalf("cpu = %v", cpu.String())
	}
	if mem := c.SystemReserved[corev1.ResourceMemory]; mem.Value() != 512<<20 {
		t.Fatalf("memory = %v", mem.String())
	}
	if err := fs.Parse([]string{"--system-reserved", "gpu=1"}); err == nil {
		t.Fatal("unsupported resource accepted")
	}
	if err := fs.Parse([]string{"--system-reserved", "ephemeral-storage=1Gi"}); err != nil {
		t.Fatalf("ephemeral-storage (the kubelet's systemReserved takes it): %v", err)
	}
}

// TestCgroupParentFollowsNamespace: an instance in another containerd
// namespace gets a cgroup parent of its own unless it sets one; the default
// namespace keeps "podhost".
func TestCgroupParentFollowsNamespace(t *testing.T) {
	tests := []struct {
		name, file string
		args       []string
		want       string
	}{
		{"defaults", "", nil, "podhost"},
		{"namespace in file", "namespace: blue\n", nil, "podhost-blue"},
		{"namespace flag", "", []string{"--namespace", "green"}, "podhost-green"},
		{"default namespace by flag", "namespace: blue\n", []string{"--namespace", "podhost"}, "podhost"},
		{"explicit parent kept", "cgroupParent: mine\n", []string{"--namespace", "green"}, "mine"},
		{"explicit default parent kept", "cgroupParent: podhost\nnamespace: blue\n", nil, "podhost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			flags := Default()
			var cfgPath string
			flags.BindGlobalFlags(fs, &cfgPath)
			flags.BindDaemonFlags(fs)
			if err := fs.Parse(append([]string{"--config", path}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			c, err := Resolve(cfgPath, flags, fs)
			if err != nil {
				t.Fatal(err)
			}
			if c.CgroupParent != tt.want {
				t.Errorf("CgroupParent = %q, want %q", c.CgroupParent, tt.want)
			}
		})
	}
}

func TestMaxPodsFlag(t *testing.T) {
	if d := Default(); d.MaxPods != 110 {
		t.Fatalf("default maxPods = %d, want 110", d.MaxPods)
	}
	flags := Default()
	fs := pflag.NewFlagSet("daemon", pflag.ContinueOnError)
	flags.BindDaemonFlags(fs)
	if err := fs.Parse([]string{"--max-pods", "3"}); err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]byte("maxPods: 50\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.MergeFlags(flags, fs)
	if c.MaxPods != 3 {
		t.Fatalf("maxPods = %d, want the flag's 3 over the file's 50", c.MaxPods)
	}
}

func TestLogDriverKeyAndFlag(t *testing.T) {
	if d := Default(); d.LogDriver != "" {
		t.Fatalf("default logDriver = %q, want \"\" (resolved by the runtime)", d.LogDriver)
	}
	c, err := Parse([]byte("logDriver: /opt/ld\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.LogDriver != "/opt/ld" {
		t.Fatalf("logDriver = %q, want the file's /opt/ld", c.LogDriver)
	}
	flags := Default()
	fs := pflag.NewFlagSet("daemon", pflag.ContinueOnError)
	flags.BindDaemonFlags(fs)
	if err := fs.Parse([]string{"--log-driver", "/usr/lib/ld"}); err != nil {
		t.Fatal(err)
	}
	c.MergeFlags(flags, fs)
	if c.LogDriver != "/usr/lib/ld" {
		t.Fatalf("logDriver = %q, want the flag's /usr/lib/ld over the file's", c.LogDriver)
	}
}

func TestMetricsAddressFlag(t *testing.T) {
	if d := Default(); d.MetricsAddress != "" {
		t.Fatalf("default metricsAddress = %q, want off", d.MetricsAddress)
	}
	flags := Default()
	fs := pflag.NewFlagSet("daemon", pflag.ContinueOnError)
	flags.BindDaemonFlags(fs)
	if err := fs.Parse([]string{"--metrics-address", "127.0.0.1:9200"}); err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]byte("metricsAddress: 127.0.0.1:9101\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.MergeFlags(flags, fs)
	if c.MetricsAddress != "127.0.0.1:9200" {
		t.Fatalf("metricsAddress = %q, want the flag's over the file's", c.MetricsAddress)
	}
}

func TestClusterSection(t *testing.T) {
	c, err := Parse([]byte("cluster: {kubeconfig: /etc/podhost/cluster.kubeconfig, nodeName: box-1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Cluster.Joined() || c.Cluster.Kubeconfig != "/etc/podhost/cluster.kubeconfig" || c.Cluster.NodeName != "box-1" {
		t.Errorf("cluster: %+v", c.Cluster)
	}
	if Default().Cluster.Joined() || Default().Cluster.KubeletPort != 10250 {
		t.Errorf("the default: %+v", Default().Cluster)
	}
	for doc, want := range map[string]string{
		"cluster: {kubeconfig: rel/path}":                                      "cluster.kubeconfig: must be an absolute path",
		"cluster: {nodeName: Box_1}":                                           `cluster.nodeName: "Box_1"`,
		"cluster: {kubeconfig: /k, token: x}":                                  "unknown field",
		"cluster: {kubeconfig: /k, nodeName: ''}":                              "",
		"cluster: {kubeletPort: 70000}":                                        "cluster.kubeletPort: 70000 is not a port",
		"cluster: {kubeletPort: -1}":                                           "cluster.kubeletPort: -1 is not a port",
		"cluster: {kubeletPort: 0}":                                            "",
		"cluster: {nodeIP: box}":                                               `cluster.nodeIP: "box" is not an IP address`,
		"cluster: {kubeletAddress: '0.0.0.0', nodeIP: '::1'}":                  "",
		"cluster: {kubeletAddress: 'x:1'}":                                     `cluster.kubeletAddress: "x:1" is not an IP address`,
		"cluster: {tlsCertFile: /c}":                                           "cluster.tlsCertFile and cluster.tlsPrivateKeyFile: give both or neither",
		"cluster: {tlsCertFile: /c, tlsPrivateKeyFile: k}":                     `cluster.tlsPrivateKeyFile: must be an absolute path, got "k"`,
		"cluster: {clientCAFile: ca.crt}":                                      `cluster.clientCAFile: must be an absolute path, got "ca.crt"`,
		"cluster: {tlsCertFile: /c, tlsPrivateKeyFile: /k, clientCAFile: /ca}": "",
		"cluster: {clusterDNS: [10.96.0.10, 'fd00::a']}":                       "",
		"cluster: {clusterDNS: [10.96.0.10, kube-dns]}":                        `cluster.clusterDNS[1]: "kube-dns" is not an IP address`,
		"cluster: {clusterDomain: Corp_Local}":                                 `cluster.clusterDomain: "Corp_Local"`,
		"cluster: {clusterDomain: cluster.local., nodeName: box}":              "",
	} {
		_, err := Parse([]byte(doc))
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", doc, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", doc, err, want)
		}
	}
}

// TestEditCluster: the cluster: section is set (added, or replaced) and
// the rest of the file kept, comments too; a file that is not a mapping,
// or a section that makes the config invalid, is refused and the file
// untouched; a missing file is made.
func TestEditCluster(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	orig := "# the box\nmaxPods: 20 # few\ncluster:\n  kubeconfig: /old\n"
	if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	e, err := EditCluster(path, Cluster{Kubeconfig: "/etc/podhost/cluster.kubeconfig", NodeName: "box-1"})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != orig {
		t.Fatalf("EditCluster wrote before Write: %s", b)
	}
	if err := e.Write(); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil || c.MaxPods != 20 || c.Cluster.Kubeconfig != "/etc/podhost/cluster.kubeconfig" || c.Cluster.NodeName != "box-1" {
		t.Fatalf("after: %v %+v", err, c)
	}
	b, _ := os.ReadFile(path)
	if st, _ := os.Stat(path); !strings.Contains(string(b), "# the box") || !strings.Contains(string(b), "# few") || st.Mode().Perm() != 0o640 {
		t.Errorf("comments or mode lost: %v\n%s", st.Mode(), b)
	}
	for name, content := range map[string]string{"list": "- a\n", "bad yaml": "maxPods: [\n"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := EditCluster(path, Cluster{Kubeconfig: "/k"}); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
	if _, err := EditCluster(path, Cluster{Kubeconfig: "relative"}); err == nil {
		t.Error("a relative kubeconfig was accepted")
	}
	fresh := filepath.Join(dir, "new", "config.yaml")
	if e, err := EditCluster(fresh, Cluster{Kubeconfig: "/k"}); err != nil || e.Write() != nil {
		t.Fatalf("a missing file: %v", err)
	}
	if c, err := Load(fresh); err != nil || c.Cluster.Kubeconfig != "/k" {
		t.Errorf("made file: %v %+v", err, c)
	}
}
