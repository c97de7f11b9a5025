//go:build integration

package integration

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestEventsAggregatedAndKept: a readiness probe that always fails is one
// Unhealthy event counted as the kubelet's recorder counts it — describe
// and events show "(xN over …)" and Pulled, Created and Started are still
// there —, and the pod's events outlive it: after delete, `events` still
// lists them, as the API server keeps events for an hour.
func TestEventsAggregatedAndKept(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("flaky.yaml", podManifest("flaky", `  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+env.ImageRef+`
    command: ["sleep", "3600"]
    readinessProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
      failureThreshold: 1
`))
	repeated := regexp.MustCompile(`Unhealthy\s+\S+ \(x([0-9]+) over `)
	desc, _ := d.waitCLI(120*time.Second, "Unhealthy counted at least 5 times", func(stdout, _ string) bool {
		m := repeated.FindStringSubmatch(stdout)
		return len(m) == 2 && len(m[1]) > 0 && (len(m[1]) > 1 || m[1][0] >= '5')
	}, "describe", "pod", "flaky")
	for _, want := range []string{"Created", "Started"} {
		if !strings.Contains(desc, want) {
			t.Fatalf("describe lost %s among the repeated probe failures:\n%s", want, desc)
		}
	}
	if n := strings.Count(desc, "Readiness probe failed"); n != 1 {
		t.Fatalf("the repeated event shows %d times, want once:\n%s", n, desc)
	}
	if out := d.mustCLI("events", "--for", "pod/flaky"); !regexp.MustCompile(`\(x[0-9]+ over [^)]+\)\s+Warning\s+Unhealthy\s+pod/flaky`).MatchString(out) {
		t.Fatalf("events does not show the count:\n%s", out)
	}

	d.mustCLI("delete", "flaky", "--grace-period=1")
	out := d.mustCLI("events")
	for _, want := range []string{"pod/flaky", "Started", "Unhealthy", "Killing"} {
		if !strings.Contains(out, want) {
			t.Fatalf("after delete, events lacks %q:\n%s", want, out)
		}
	}
}
