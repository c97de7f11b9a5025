//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// envPod is a pod that sleeps with env (YAML list items at 4 spaces) and
// volumes (pod-level items at 2 spaces, mounts at 4).
func envPod(name, envs, volumes, mounts string) string {
	return podManifest(name, fmt.Sprintf(`  terminationGracePeriodSeconds: 1
%s  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
    env:
%s%s`, volumes, env.ImageRef, envs, mounts))
}

// hostProcsWithEnv are the host's processes whose environment holds the
// line kv (read from /proc, not from podhost).
func hostProcsWithEnv(t *testing.T, kv string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && strings.Contains("\x00"+string(b), "\x00"+kv+"\x00") {
			n++
		}
	}
	return n
}

// TestURLPodsReadOnlyTheURLsSecrets: the manifest dir declares Secret
// db-password; a pod of the manifest URL that requires it waits with the
// kubelet's `secret "db-password" not found`, one that names it optionally
// (env and a secret volume) runs without it, and gets the URL's own
// Secret — checked in the processes' environments on the host; the dir's
// pod gets the dir's Secret and kubectl lists both. When the URL declares
// db-password too, the dir still owns the name (an error of the URL's,
// the waiting pod keeps waiting); once the dir's file is gone, the URL's
// takes the name over and the waiting pod starts with the URL's value.
func TestURLPodsReadOnlyTheURLsSecrets(t *testing.T) {
	srv := &manifestHTTP{}
	srv.listen(t)
	t.Cleanup(srv.stop)
	url := "http://" + srv.addr + "/pods.yaml"
	d := newPodhostd(t)
	useManifestURL(t, d, url)
	d.enableKubeAPI()
	t.Cleanup(func() { srv.set(emptyList, 0) })

	local, own, urlPW := uniqueID("local-pw"), uniqueID("url-token"), uniqueID("url-pw")
	secret := func(name, key, value string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\nstringData:\n  %s: %s\n", name, key, value)
	}
	d.writeManifestMode("db.yaml", secret("db-password", "password", local), 0o600)
	d.writeManifest("local.yaml", envPod("localpod", "    - name: LOCAL_DBPW\n      valueFrom: {secretKeyRef: {name: db-password, key: password}}\n", "", ""))
	urlPods := secret("url-token", "token", own) + "---\n" +
		envPod("urlwait", "    - name: URL_DBPW\n      valueFrom: {secretKeyRef: {name: db-password, key: password}}\n", "", "") + "---\n" +
		envPod("urlown", "    - name: URL_TOKEN\n      valueFrom: {secretKeyRef: {name: url-token, key: token}}\n"+
			"    - name: URL_DBPW\n      valueFrom: {secretKeyRef: {name: db-password, key: password, optional: true}}\n",
			"  volumes:\n  - name: local\n    secret: {secretName: db-password, optional: true}\n",
			"    volumeMounts:\n    - {name: local, mountPath: /etc/local}\n")
	srv.set(urlPods, 0)
	d.start()
	d.useKubectl()

	d.waitRunning("localpod")
	d.waitRunning("urlown")
	d.waitPod("urlwait", 60*time.Second, `CreateContainerConfigError: secret "db-password" not found`, func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CreateContainerConfigError" &&
			strings.Contains(cs.State.Waiting.Message, `secret "db-password" not found`)
	})
	if out, errOut, code := d.execCLI("", "urlown", "--", "sh", "-c", `echo "$URL_TOKEN|${URL_DBPW-unset}|$(ls /etc/local)"`); code != 0 ||
		strings.TrimSpace(out) != own+"|unset|" {
		t.Errorf("urlown sees %q (exit %d, %s), want its URL's token, no URL_DBPW and an empty /etc/local", out, code, errOut)
	}
	if n := hostProcsWithEnv(t, "URL_DBPW="+local); n != 0 {
		t.Errorf("%d host processes of the URL's pods hold the manifest dir's Secret", n)
	}
	if hostProcsWithEnv(t, "URL_TOKEN="+own) == 0 || hostProcsWithEnv(t, "LOCAL_DBPW="+local) == 0 {
		t.Error("no host process holds the URL's token (URL pod) or the dir's Secret (dir pod)")
	}
	if names := d.mustKubectl("get", "secrets", "-o", "name"); !strings.Contains(names, "secret/db-password") || !strings.Contains(names, "secret/url-token") {
		t.Errorf("kubectl get secrets: %q, want both sources' Secrets", names)
	}

	// The URL declares the name too: the dir's stays the owner.
	srv.set(urlPods+"---\n"+secret("db-password", "password", urlPW), 0)
	d.waitCLI(60*time.Second, "the URL's duplicate Secret", func(_, stderr string) bool {
		return strings.Contains(stderr, "duplicate Secret default/db-password, already defined in db.yaml")
	}, "get", "pods")
	if p := d.pod("urlwait"); p == nil || allRunning(p) {
		t.Fatalf("urlwait after the URL's duplicate: %v", p)
	}
	// The dir's declaration goes: the URL's owns the name, its pod starts with it.
	d.removeManifest("db.yaml")
	d.waitRunning("urlwait")
	if out, _, _ := d.execCLI("", "urlwait", "--", "sh", "-c", `echo "$URL_DBPW"`); strings.TrimSpace(out) != urlPW {
		t.Errorf("urlwait's URL_DBPW = %q, want the URL's own value", out)
	}
	if n := hostProcsWithEnv(t, "URL_DBPW="+local); n != 0 {
		t.Errorf("%d host processes of the URL's pods hold the manifest dir's Secret", n)
	}
	d.removeManifest("local.yaml")
}
