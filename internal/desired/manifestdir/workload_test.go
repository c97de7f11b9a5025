package manifestdir

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	psaapi "k8s.io/pod-security-admission/api"

	"github.com/podhost/podhost/internal/desired/podsecurity"
)

func deployment(name string, replicas int, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s}
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers: [{name: main, image: %q}]
`, name, replicas, name, name, image)
}

// A workload is one object of the dir: created in its own file, unchanged
// when applied again, configured when scaled; its pods are not objects
// of their own (a Pod document or a delete of one is refused, naming
// the workload), and deleting it removes its document.
func TestApplyWorkload(t *testing.T) {
	dir, ctx := newDir(t), t.Context()
	actions := func(doc string) []Action {
		t.Helper()
		rs, err := Apply(ctx, dir, decode(t, doc), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var out []Action
		for _, r := range rs {
			out = append(out, r.Action)
		}
		return out
	}
	if got := actions(deployment("web", 2, "img:1")); !slices.Equal(got, []Action{Created}) {
		t.Fatalf("first apply: %v", got)
	}
	if got := entries(t, dir); !slices.Equal(got, []string{"web.deployment.yaml"}) {
		t.Fatalf("dir holds %v", got)
	}
	if got := actions(deployment("web", 2, "img:1")); !slices.Equal(got, []Action{Unchanged}) {
		t.Errorf("same document again: %v", got)
	}
	if got := actions(deployment("web", 3, "img:1")); !slices.Equal(got, []Action{Configured}) {
		t.Errorf("scaled: %v", got)
	}
	if !strings.Contains(read(t, filepath.Join(dir, "web.deployment.yaml")), "replicas: 3") {
		t.Errorf("file not rewritten: %s", read(t, filepath.Join(dir, "web.deployment.yaml")))
	}
	podName := decode(t, deployment("web", 3, "img:1"))[0].Workload.Pods[0].Name
	want := "pod default/" + podName + " belongs to deployment web (web.deployment.yaml)"
	if _, err := Apply(ctx, dir, decode(t, pod("default", podName, "img:2")), Options{}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("apply of a pod of the deployment: %v, want %q", err, want)
	}
	if _, err := Delete(ctx, dir, []Ref{{Pod, "default", podName}}, Options{}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("delete of a pod of the deployment: %v, want %q", err, want)
	}
	if _, _, err := Lookup(dir, Ref{Pod, "default", podName}, Options{}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("lookup of a pod of the deployment: %v, want %q", err, want)
	}
	rm, err := Delete(ctx, dir, []Ref{{Deployment, "default", "web"}}, Options{})
	if err != nil || len(rm) != 1 || !rm[0].Removed {
		t.Fatalf("delete deployment: %+v, %v", rm, err)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("dir holds %v after the delete", got)
	}
}

// A CronJob is applied into its own file and deleted by kind and name;
// pod security checks its jobTemplate's pods as any pod's.
func TestApplyCronJob(t *testing.T) {
	dir, ctx := newDir(t), t.Context()
	doc := func(privileged bool) string {
		return fmt.Sprintf(`apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "*/1 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: main, image: img:1, securityContext: {privileged: %v}}]
`, privileged)
	}
	rs, err := Apply(ctx, dir, decode(t, doc(false)), Options{})
	if err != nil || len(rs) != 1 || rs[0].Object.Kind != CronJob || rs[0].Action != Created {
		t.Fatalf("apply: %+v %v", rs, err)
	}
	if got := entries(t, dir); !slices.Equal(got, []string{"tick.cronjob.yaml"}) {
		t.Fatalf("dir holds %v", got)
	}
	_, err = Apply(ctx, dir, decode(t, doc(true)), Options{PodSecurity: podsecurity.Policy{Key: "manifestDir", Level: psaapi.LevelBaseline}})
	if err == nil || !strings.Contains(err.Error(), "privileged") {
		t.Errorf("a privileged jobTemplate under baseline: %v", err)
	}
	if rm, err := Delete(ctx, dir, []Ref{{CronJob, "default", "tick"}}, Options{}); err != nil || len(rm) != 1 || len(entries(t, dir)) != 0 {
		t.Errorf("delete cronjob tick: %+v %v, dir holds %v", rm, err, entries(t, dir))
	}
}
