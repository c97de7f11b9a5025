//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// writeManifestMode is writeManifest with a file mode (a file holding a
// Secret must not be world-readable).
func (d *podhostd) writeManifestMode(name, content string, mode os.FileMode) {
	d.t.Helper()
	tmp := filepath.Join(d.manifestDir, ".tmp-"+name)
	if err := os.WriteFile(tmp, []byte(content), mode); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(d.manifestDir, name)); err != nil {
		d.t.Fatal(err)
	}
}

func configDataManifest(secretValue, ab string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  MODE: fast
  a: "%[3]s"
  b: "%[3]s"
  app.conf: "listen=80"
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: %[1]s
  user: admin
---
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: cfg
    configMap:
      name: app
  - name: items
    configMap:
      name: app
      items:
      - key: app.conf
        path: conf/app.conf
        mode: 0640
  - name: sec
    secret:
      secretName: creds
      defaultMode: 0400
  containers:
  - name: main
    image: %[2]s
    envFrom:
    - prefix: CFG_
      configMapRef:
        name: app
    env:
    - name: PASSWORD
      valueFrom:
        secretKeyRef:
          name: creds
          key: password
    volumeMounts:
    - {name: cfg, mountPath: /etc/cfg}
    - {name: items, mountPath: /etc/items}
    - {name: sec, mountPath: /etc/sec}
    command: ["sh", "-c", "while true; do (cd /etc/cfg/..data 2>/dev/null && x=$(cat a 2>/dev/null) && y=$(cat b 2>/dev/null) && echo \"$x\" > /tmp/last && [ \"$x\" != \"$y\" ] && echo \"MISMATCH $x $y\" >> /tmp/mismatch); sleep 0.005; done"]
`, secretValue, env.ImageRef, ab)
}

// TestConfigMapsAndSecrets: a file with a ConfigMap, a Secret and a Pod
// using envFrom, secretKeyRef, a configMap volume with items and a secret
// volume with defaultMode 0400. The container sees the env, contents and
// modes; the secret volume is a tmpfs and the Secret's value is nowhere on
// disk under the state or log dirs; editing the ConfigMap updates the
// mounted files within 2 s without restarting the container, and a reader
// of two keys written together never sees them mismatched.
func TestConfigMapsAndSecrets(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	secret := "pw-" + uniqueID("s")
	d.writeManifestMode("app.yaml", configDataManifest(secret, "0"), 0o600)
	pod := d.waitRunning("web")
	sh := func(script string) string {
		t.Helper()
		out, errOut, code := d.execCLI("", "web", "--", "sh", "-c", script)
		if code != 0 {
			t.Fatalf("exec %q: exit %d: %s", script, code, errOut)
		}
		return strings.TrimSpace(out)
	}
	want := map[string]string{
		`echo "$CFG_MODE $CFG_a $PASSWORD"`:                               "fast 0 " + secret,
		"cat /etc/items/conf/app.conf; echo; ls /etc/items":               "listen=80\nconf",
		"stat -L -c %a /etc/items/conf/app.conf":                          "640",
		"stat -L -c %a /etc/sec/password /etc/sec/user":                   "400\n400",
		"cat /etc/sec/user":                                               "admin",
		"touch /etc/cfg/x 2>/dev/null && echo writable || echo read-only": "read-only",
		"readlink /etc/cfg/a; readlink /etc/cfg/..data | cut -c1-4":       "..data/a\n..20",
		"grep -c ' /etc/sec tmpfs ' /proc/mounts || true":                 "1",
	}
	for script, w := range want {
		if got := sh(script); got != w {
			t.Errorf("%s: got %q, want %q", script, got, w)
		}
	}
	secDir := filepath.Join(d.stateDir, "pods", string(pod.UID), "volumes", "secret", "sec")
	if mounts, _ := os.ReadFile("/proc/mounts"); !strings.Contains(string(mounts), " "+secDir+" tmpfs ") {
		t.Errorf("%s is not a tmpfs on the host", secDir)
	}
	assertNotOnDisk(t, secret, d.stateDir, d.logDir)
	if strings.Contains(d.logs(), secret) {
		t.Error("the Secret's value is in podhost's log")
	}

	// Edit the ConfigMap: files change within 2 s, same container.
	cs := containerStatus(pod, "main")
	for i := 1; i <= 20; i++ {
		d.writeManifestMode("app.yaml", configDataManifest(secret, fmt.Sprint(i)), 0o600)
		if i%5 == 0 {
			start := time.Now()
			err := waitFor(2*time.Second, func() (bool, error) {
				out, _, _ := d.execCLI("", "web", "--", "cat", "/etc/cfg/a", "/etc/cfg/b")
				return out == fmt.Sprintf("%d%d", i, i), nil
			})
			if err != nil {
				t.Fatalf("edit %d: mounted files not updated within 2s", i)
			}
			t.Logf("edit %d visible after %v", i, time.Since(start).Round(time.Millisecond))
		}
	}
	after := d.pod("web")
	if after.UID != pod.UID {
		t.Errorf("pod UID changed: %s -> %s", pod.UID, after.UID)
	}
	if c := containerStatus(after, "main"); c.ContainerID != cs.ContainerID || c.RestartCount != cs.RestartCount {
		t.Errorf("container restarted: %s/%d -> %s/%d", cs.ContainerID, cs.RestartCount, c.ContainerID, c.RestartCount)
	}
	if got := sh(`echo "$CFG_a"; cat /tmp/mismatch 2>/dev/null || true`); got != "0" {
		t.Errorf("env must keep the value the container started with, and no mismatched read: %q", got)
	}
	if err := waitFor(5*time.Second, func() (bool, error) {
		out, _, _ := d.execCLI("", "web", "--", "cat", "/tmp/last")
		return strings.TrimSpace(out) == "20", nil
	}); err != nil {
		t.Error("the reader loop did not read the last version")
	}

	// Removing the pod unmounts the secret tmpfs.
	d.removeManifest("app.yaml")
	if err := waitFor(60*time.Second, func() (bool, error) {
		mounts, err := os.ReadFile("/proc/mounts")
		return d.pod("web") == nil && !strings.Contains(string(mounts), secDir), err
	}); err != nil {
		t.Errorf("secret tmpfs still mounted after the pod was removed: %v", err)
	}
}

// TestMissingConfigMapWaits: a container referencing a ConfigMap that does
// not exist waits with CreateContainerConfigError naming it, and starts by
// itself once the ConfigMap's file is added.
func TestMissingConfigMapWaits(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("late.yaml", podManifest("late", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "echo got=$K; exec sleep 3600"]
    env:
    - name: K
      valueFrom:
        configMapKeyRef: {name: late-cm, key: k}
`, env.ImageRef)))
	d.waitPod("late", 60*time.Second, "CreateContainerConfigError naming the ConfigMap", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CreateContainerConfigError" &&
			strings.Contains(cs.State.Waiting.Message, `configmap "late-cm" not found`)
	})
	d.writeManifest("late-cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: late-cm\ndata:\n  k: hello\n")
	start := time.Now()
	d.waitRunning("late")
	t.Logf("started %v after the ConfigMap was added", time.Since(start).Round(time.Millisecond))
	out, _, _ := d.execCLI("", "late", "--", "sh", "-c", "echo $K")
	if strings.TrimSpace(out) != "hello" {
		t.Errorf("K = %q", out)
	}
}

// assertNotOnDisk fails if value is in any file under dirs, not crossing
// into other filesystems (the secret volumes are tmpfs mounts: memory).
func assertNotOnDisk(t *testing.T, value string, dirs ...string) {
	t.Helper()
	for _, root := range dirs {
		var rootSt syscall.Stat_t
		if err := syscall.Stat(root, &rootSt); err != nil {
			t.Fatal(err)
		}
		n := 0
		err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			var st syscall.Stat_t
			if syscall.Lstat(p, &st) != nil {
				return nil
			}
			if st.Dev != rootSt.Dev {
				if de.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !de.Type().IsRegular() {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			n++
			if bytes.Contains(data, []byte(value)) {
				t.Errorf("the Secret's value is on disk in %s", p)
			}
			return nil
		})
		if err != nil || n == 0 {
			t.Errorf("walk %s: %v (%d files)", root, err, n)
		}
	}
}

// TestDownwardAPIAndProjectedVolumes: downwardAPI files (labels, name,
// a memory limit with a divisor) and a projected volume (ConfigMap key +
// pod UID) on a tmpfs; an in-place label change of a pod with an explicit
// UID updates the labels file and keeps the container.
func TestDownwardAPIAndProjectedVolumes(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	manifest := func(tier string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: info
data:
  greeting: hello
---
apiVersion: v1
kind: Pod
metadata:
  name: dw
  uid: 5b0d1a2e-0000-4000-8000-00000000d0a1
  labels: {app: dw, tier: %s}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: meta
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: name, fieldRef: {fieldPath: metadata.name}}
      - {path: mem, resourceFieldRef: {containerName: main, resource: limits.memory, divisor: 1Mi}}
  - name: all
    projected:
      sources:
      - configMap: {name: info}
      - downwardAPI: {items: [{path: pod/uid, fieldRef: {fieldPath: metadata.uid}}]}
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
    resources: {limits: {memory: 64Mi}}
    volumeMounts:
    - {name: meta, mountPath: /etc/meta}
    - {name: all, mountPath: /etc/all}
`, tier, env.ImageRef)
	}
	d.writeManifest("dw.yaml", manifest("a"))
	pod := d.waitRunning("dw")
	out, errOut, code := d.execCLI("", "dw", "--", "sh", "-c",
		"cat /etc/meta/labels; echo; cat /etc/meta/name; echo; cat /etc/meta/mem; echo; cat /etc/all/greeting; echo; cat /etc/all/pod/uid; echo; grep -c ' /etc/all tmpfs ' /proc/mounts")
	want := "app=\"dw\"\ntier=\"a\"\ndw\n64\nhello\n5b0d1a2e-0000-4000-8000-00000000d0a1\n1\n"
	if code != 0 || out != want {
		t.Fatalf("files: %q (exit %d, %s), want %q", out, code, errOut, want)
	}
	d.writeManifest("dw.yaml", manifest("b"))
	if err := waitFor(5*time.Second, func() (bool, error) {
		out, _, _ := d.execCLI("", "dw", "--", "cat", "/etc/meta/labels")
		return out == "app=\"dw\"\ntier=\"b\"", nil
	}); err != nil {
		t.Fatal("labels file not updated after an in-place label change")
	}
	// The pod keeps its UID and its container: a label edit is applied in
	// place (syncer specChanged compares identity hashes).
	if after := d.pod("dw"); after.UID != pod.UID || after.Status.ContainerStatuses[0].ContainerID != pod.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("pod changed: %s %s -> %s %s", pod.UID, pod.Status.ContainerStatuses[0].ContainerID,
			after.UID, after.Status.ContainerStatuses[0].ContainerID)
	}
}
