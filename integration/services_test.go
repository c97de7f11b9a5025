//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// servicesPods: web (app: web) serves busybox httpd on 8080 and is Ready
// while /tmp/ready exists; client (app: client) only sleeps.
const servicesPods = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: %[1]s
    command: ["sh", "-c", "touch /tmp/ready; exec httpd -f -p 8080 -h /var/www"]
    ports: [{name: http, containerPort: 8080}]
    readinessProbe:
      exec: {command: ["cat", "/tmp/ready"]}
      periodSeconds: 1
      failureThreshold: 1
---
apiVersion: v1
kind: Pod
metadata:
  name: client
  labels: {app: client}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: tools
    hostPath: {path: %[2]s, type: Directory}
  containers:
  - name: c
    image: %[1]s
    command: ["sleep", "3600"]
    volumeMounts: [{name: tools, mountPath: /tools, readOnly: true}]
`

// servicesService: web has a virtual IP, port 80 to web's port named http
// (8080); web-direct is headless, at web's own port.
const servicesService = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - name: http
    port: 80
    targetPort: http
---
apiVersion: v1
kind: Service
metadata:
  name: web-direct
spec:
  clusterIP: None
  selector: {app: web}
  ports:
  - port: 8080
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: web
`

// TestServicesDNS: Services in the manifest dir make their names resolve in
// every pod: web's virtual IP (its port 80 DNAT-balanced to web's 8080, the
// rule in the host's iptables-save) and the headless web-direct's pod IPs
// (a pod made unready drops out of the answer and comes back); names
// through the cluster's search path (web, web.default, the FQDN); a removed
// Service's name is gone with its DNAT rules; the pods' DNS server answers
// no one off the pod network.
func TestServicesDNS(t *testing.T) {
	tools := buildHTTPGet(t)
	d := newPodhostd(t)
	d.start()
	d.writeManifest("pods.yaml", fmt.Sprintf(servicesPods, env.ImageRef, tools))
	d.writeManifest("svc.yaml", servicesService)
	d.waitRunning("client")
	web := d.waitPod("web", 90*time.Second, "Ready", func(p *corev1.Pod) bool { return !podReadySince(p).IsZero() })

	resolv, _, _ := d.execCLI("", "client", "--", "cat", "/etc/resolv.conf")
	gw := gatewayOf(t, env.CNISubnet)
	for _, want := range []string{"search default.svc.cluster.local svc.cluster.local cluster.local", "nameserver " + gw.String(), "options ndots:5"} {
		if !strings.Contains(resolv, want) {
			t.Errorf("client's resolv.conf lacks %q:\n%s", want, resolv)
		}
	}
	for _, url := range []string{"http://web/", "http://web.default/", "http://web.default.svc.cluster.local/", "http://web-direct:8080/"} {
		d.waitClient(t, "GET "+url+" reaches web", func(out string, code int) bool {
			return code == 0 && strings.Contains(out, "hello from podhost")
		}, "/tools/httpget", url)
	}
	vip := d.lookupVIP(t, "web.default.svc.cluster.local")
	if !netip.MustParsePrefix("10.96.0.0/16").Contains(vip) {
		t.Errorf("web's address %v is not in serviceCIDR 10.96.0.0/16", vip)
	}
	rule := fmt.Sprintf("-d %s/32 -p tcp -m tcp --dport 80 -m comment --comment \"default/web:80\" -j DNAT --to-destination %s:8080", vip, web.Status.PodIP)
	if save := iptablesSave(t); !strings.Contains(save, rule) {
		t.Errorf("iptables-save lacks %q:\n%s", rule, save)
	}
	// A pod started once the Services exist gets their service links
	// (enableServiceLinks' default): web's, not the headless web-direct's.
	d.writeManifest("linked.yaml", fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: linked}\nspec:\n  terminationGracePeriodSeconds: 1\n"+
		"  containers: [{name: c, image: %s, command: [sleep, \"3600\"]}]\n", env.ImageRef))
	d.waitRunning("linked")
	if out, _, _ := d.execCLI("", "linked", "--", "env"); !strings.Contains(out, "WEB_SERVICE_HOST="+vip.String()+"\n") ||
		!strings.Contains(out, "WEB_SERVICE_PORT=80\n") || !strings.Contains(out, "WEB_PORT_80_TCP_ADDR="+vip.String()+"\n") ||
		strings.Contains(out, "WEB_DIRECT_SERVICE_HOST") {
		t.Errorf("linked's environment lacks web's service links (or has the headless one's):\n%s", out)
	}
	d.waitClient(t, "busybox nslookup web-direct answers web's IP", func(out string, code int) bool {
		return code == 0 && strings.Contains(out, "Address: "+web.Status.PodIP)
	}, "nslookup", "web-direct.default.svc.cluster.local")

	// Unready: out of the headless answer (the name stays, without addresses); ready: back.
	if _, errOut, code := d.execCLI("", "web", "--", "rm", "/tmp/ready"); code != 0 {
		t.Fatalf("rm /tmp/ready: %d %s", code, errOut)
	}
	d.waitPod("web", 60*time.Second, "not Ready", func(p *corev1.Pod) bool { return podReadySince(p).IsZero() })
	d.waitClient(t, "web-direct resolves to nothing while web is unready", func(out string, code int) bool {
		return code != 0 && strings.Contains(out, "no such host")
	}, "sh", "-c", "/tools/httpget http://web-direct:8080/ 2>&1")
	if err := waitFor(30*time.Second, func() (bool, error) { return !strings.Contains(iptablesSave(t), vip.String()), nil }); err != nil {
		t.Errorf("web's DNAT rule stayed while web is unready")
	}
	if _, errOut, code := d.execCLI("", "web", "--", "touch", "/tmp/ready"); code != 0 {
		t.Fatalf("touch /tmp/ready: %d %s", code, errOut)
	}
	for _, url := range []string{"http://web-direct:8080/", "http://web/"} {
		d.waitClient(t, url+" back once web is ready", func(out string, code int) bool {
			return code == 0 && strings.Contains(out, "hello from podhost")
		}, "/tools/httpget", url)
	}

	checkNotOpenResolver(t, gw)

	d.removeManifest("svc.yaml")
	d.waitClient(t, "web.default.svc.cluster.local gone with its Service", func(out string, code int) bool {
		return code != 0 && strings.Contains(out, "NXDOMAIN")
	}, "sh", "-c", "nslookup web.default.svc.cluster.local 2>&1")
	if err := waitFor(30*time.Second, func() (bool, error) {
		save := iptablesSave(t)
		return !strings.Contains(save, vip.String()) && !strings.Contains(save, `podhost services: \"`+env.CNINetwork+`\"`), nil
	}); err != nil {
		t.Errorf("web's DNAT rules or the services chains' jumps stayed after the Service was removed:\n%s", iptablesSave(t))
	}
}

// lookupVIP is the address busybox nslookup in the client pod answers for name.
func (d *podhostd) lookupVIP(t *testing.T, name string) netip.Addr {
	t.Helper()
	out, errOut, code := d.execCLI("", "client", "--", "nslookup", name)
	if code == 0 {
		for _, l := range strings.Split(out, "\n") {
			if a, ok := strings.CutPrefix(strings.TrimSpace(l), "Address: "); ok {
				if ip, err := netip.ParseAddr(a); err == nil {
					return ip
				}
			}
		}
	}
	t.Fatalf("nslookup %s: %d %s %s", name, code, out, errOut)
	return netip.Addr{}
}

// iptablesSave is the host's nat table.
func iptablesSave(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("iptables-save", "-t", "nat").Output()
	if err != nil {
		t.Fatalf("iptables-save: %v", err)
	}
	return string(out)
}

// waitClient runs a command in the client pod until ok accepts its output.
func (d *podhostd) waitClient(t *testing.T, what string, ok func(out string, code int) bool, cmd ...string) {
	t.Helper()
	var out, errOut string
	var code int
	err := waitFor(60*time.Second, func() (bool, error) {
		out, errOut, code = d.execCLI("", append([]string{"client", "--"}, cmd...)...)
		return ok(out, code), nil
	})
	if err != nil {
		t.Fatalf("%s: not reached: last exit %d, stdout %q, stderr %q\n%s", what, code, out, errOut, d.logs())
	}
}

// gatewayOf is the bridge's address host-local gives a subnet: its first.
func gatewayOf(t *testing.T, subnet string) netip.Addr {
	t.Helper()
	p, err := netip.ParsePrefix(subnet)
	if err != nil {
		t.Fatal(err)
	}
	return p.Masked().Addr().Next()
}

// checkNotOpenResolver queries the pods' DNS server from a network
// namespace of the test's own, routed to the host over a veth pair outside
// the pod subnet: no answer may come back.
func checkNotOpenResolver(t *testing.T, gw netip.Addr) {
	t.Helper()
	ns := fmt.Sprintf("phdns%d", time.Now().UnixNano()%1e6)
	hostIf, nsIf := ns+"h", ns+"n"
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	run("ip", "netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	run("ip", "link", "add", hostIf, "type", "veth", "peer", "name", nsIf, "netns", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", hostIf).Run() })
	run("ip", "addr", "add", "169.254.253.1/30", "dev", hostIf)
	run("ip", "link", "set", hostIf, "up")
	run("ip", "-n", ns, "addr", "add", "169.254.253.2/30", "dev", nsIf)
	run("ip", "-n", ns, "link", "set", nsIf, "up")
	run("ip", "-n", ns, "route", "add", gw.String()+"/32", "via", "169.254.253.1")
	// The route works: the gateway answers a ping from the namespace.
	run("ip", "netns", "exec", ns, "busybox", "ping", "-c", "1", "-W", "5", gw.String())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "busybox", "nslookup", "web.default.svc.cluster.local", gw.String()).CombinedOutput()
	if err == nil || strings.Contains(string(out), "Address: 10.") {
		t.Errorf("the pods' DNS server answered a client off the pod network:\n%s", out)
	}
}

// buildHTTPGet builds testdata/httpget (static) into a dir of its own, for a
// hostPath volume.
func buildHTTPGet(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(env.Dir, "tools-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "httpget"), "./testdata/httpget")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build httpget: %v\n%s", err, out)
	}
	return dir
}

// TestServicesVIPAcrossCrash: a Service removed while podhost is killed
// loses its DNAT rules when podhost starts again (the rules are rewritten
// from the manifests, nothing stale stays), and one that stays keeps
// answering through its virtual IP across the crash.
func TestServicesVIPAcrossCrash(t *testing.T) {
	tools := buildHTTPGet(t)
	d := newPodhostd(t)
	d.start()
	d.writeManifest("pods.yaml", fmt.Sprintf(servicesPods, env.ImageRef, tools))
	d.writeManifest("svc.yaml", strings.Replace(servicesService, "name: web-direct", "name: gone", 1))
	d.writeManifest("keep.yaml", strings.Replace(servicesService[:strings.Index(servicesService, "---")], "name: web\n", "name: keep\n", 1))
	d.waitRunning("client")
	d.waitPod("web", 90*time.Second, "Ready", func(p *corev1.Pod) bool { return !podReadySince(p).IsZero() })
	for _, url := range []string{"http://web/", "http://keep/"} {
		d.waitClient(t, "GET "+url+" reaches web", func(out string, code int) bool {
			return code == 0 && strings.Contains(out, "hello from podhost")
		}, "/tools/httpget", url)
	}
	webVIP, keepVIP := d.lookupVIP(t, "web.default.svc.cluster.local"), d.lookupVIP(t, "keep.default.svc.cluster.local")

	d.kill(syscall.SIGKILL)
	d.removeManifest("svc.yaml")
	if save := iptablesSave(t); !strings.Contains(save, webVIP.String()) {
		t.Fatalf("web's rules went with podhost's death, before it started again:\n%s", save)
	}
	d.start()
	if err := waitFor(60*time.Second, func() (bool, error) { return !strings.Contains(iptablesSave(t), webVIP.String()), nil }); err != nil {
		t.Errorf("the removed Service's DNAT rules stayed after the restart:\n%s", iptablesSave(t))
	}
	// Readiness starts as Failure after a restart, as the kubelet's: keep's
	// rule is back once web's readiness probe passed again.
	if err := waitFor(60*time.Second, func() (bool, error) { return strings.Contains(iptablesSave(t), keepVIP.String()), nil }); err != nil {
		t.Errorf("keep's DNAT rule is not back after the restart:\n%s", iptablesSave(t))
	}
	d.waitClient(t, "http://keep/ still reaches web", func(out string, code int) bool {
		return code == 0 && strings.Contains(out, "hello from podhost")
	}, "/tools/httpget", "http://keep/")
}
