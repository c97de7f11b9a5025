//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// rolloutServiceDoc: Deployment web, 3 replicas rolled one at a time
// (maxSurge 1, maxUnavailable 0, each new pod Ready 2 s before the next
// step), each serving "VERSION HOSTNAME" on 8080
// and Ready once httpd answers; on TERM a pod keeps serving 2 s before it
// exits, as a cluster's pods do with a preStop sleep, so that the Service
// has dropped it before it stops answering. Service web: port 80 to 8080.
// The client pod asks http://web:80/ in a loop and logs "ok BODY" or
// "FAIL ERROR" per request.
const rolloutServiceDoc = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  minReadySeconds: 2
  strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: httpd
        image: %[1]s
        env: [{name: VERSION, value: v1}]
        command: ["sh", "-c", "mkdir -p /tmp/www && echo \"$VERSION $HOSTNAME\" > /tmp/www/index.html && httpd -f -p 8080 -h /tmp/www & trap 'sleep 2; exit 0' TERM; while true; do sleep 0.2; done"]
        ports: [{name: http, containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /, port: 8080}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, labels: {app: client}}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: tools, hostPath: {path: %[2]s, type: Directory}}]
  containers:
  - name: c
    image: %[1]s
    command: ["sh", "-c", "while true; do if /tools/httpget http://web:80/ > /tmp/out 2>&1; then echo \"ok $(cat /tmp/out)\"; else echo \"FAIL $(cat /tmp/out)\"; fi; sleep 0.05; done"]
    volumeMounts: [{name: tools, mountPath: /tools, readOnly: true}]
`

// TestDeploymentRolloutBehindService (issue 33's done-means): a Deployment
// of 3 replicas behind a Service; another pod reaches it by name
// (http://web:80/) all through a template edit that rolls the replicas one
// at a time. With readiness probes, maxUnavailable 0 and pods that serve
// through their grace period, not one request may fail: the Service only
// ever balances over Ready pods that are not terminating.
func TestDeploymentRolloutBehindService(t *testing.T) {
	tools := buildHTTPGet(t)
	d := newPodhostd(t)
	d.start()
	doc := fmt.Sprintf(rolloutServiceDoc, env.ImageRef, tools)
	d.writeManifest("web.yaml", doc)
	old := d.waitPodsOf("web", 180*time.Second, "3 ready", nReady(3))
	d.waitRunning("client")
	clientLog := func() []string {
		out, err := d.cli("logs", "client")
		if err != nil {
			t.Fatalf("logs client: %v: %s", err, out)
		}
		return strings.Split(strings.TrimSpace(out), "\n")
	}
	if err := waitFor(60*time.Second, func() (bool, error) {
		l := clientLog()
		return strings.HasPrefix(l[len(l)-1], "ok v1 "), nil
	}); err != nil {
		t.Fatalf("the client does not reach web before the rollout: %v; log:\n%s", err, strings.Join(clientLog(), "\n"))
	}
	before := len(clientLog())
	oldNames := map[string]bool{}
	for _, p := range old {
		oldNames[p.Name] = true
	}

	d.writeManifest("web.yaml", strings.Replace(doc, "value: v1", "value: v2", 1))
	minReady := 3
	if err := waitFor(300*time.Second, func() (bool, error) {
		pods := d.podsOf("web")
		ready, fresh := 0, 0
		for i := range pods {
			if !podReadySince(&pods[i]).IsZero() && pods[i].DeletionTimestamp == nil {
				ready++
			}
			if !oldNames[pods[i].Name] {
				fresh++
			}
		}
		minReady = min(minReady, ready)
		return fresh == 3 && len(pods) == 3 && nReady(3)(pods), nil
	}); err != nil {
		t.Fatalf("rollout not done: %v\n%s", err, d.logs())
	}
	// The last old pod stops serving 2 s after its TERM: wait for the
	// client to see only v2 (every old pod out of the Service).
	if err := waitFor(60*time.Second, func() (bool, error) {
		l := clientLog()
		return strings.HasPrefix(l[len(l)-1], "ok v2 "), nil
	}); err != nil {
		t.Fatalf("the client does not reach v2 after the rollout: %v", err)
	}
	during := clientLog()[before:]
	var failed []string
	seen := map[string]bool{}
	for _, l := range during {
		if strings.HasPrefix(l, "FAIL") {
			failed = append(failed, l)
		}
		if f := strings.Fields(l); len(f) == 3 && f[0] == "ok" {
			seen[f[1]+" "+f[2]] = true
		}
	}
	t.Logf("during the rollout: %d requests, %d failed, %d distinct pods answered, at least %d Ready", len(during), len(failed), len(seen), minReady)
	if len(failed) > 0 {
		t.Errorf("%d of %d requests through the Service failed during the rollout:\n%s", len(failed), len(during), strings.Join(failed, "\n"))
	}
	if len(during) < 20 {
		t.Errorf("only %d requests during the rollout: the client did not poll it through", len(during))
	}
	v1, v2 := 0, 0
	for s := range seen {
		if strings.HasPrefix(s, "v1 ") {
			v1++
		} else {
			v2++
		}
	}
	if v1 == 0 || v2 < 3 {
		t.Errorf("answers from %d v1 and %d v2 pods during the rollout; want old ones, then all 3 new ones", v1, v2)
	}
	if minReady < 3 {
		t.Errorf("as few as %d Ready pods during the rollout (maxUnavailable 0: want 3)", minReady)
	}
}
