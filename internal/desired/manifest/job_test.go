package manifest

import (
	"strings"
	"testing"
)

const jobDoc = `apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  parallelism: 2
  completions: 3
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox:1}]
`

// A Job's first pods (min(parallelism, completions)) are named NAME-<5
// characters> and labelled as the Job controller labels them; JobPod
// makes the next attempts, distinct and stable.
func TestJobPods(t *testing.T) {
	objs := decodeWorkloadDoc(t, jobDoc)
	w := objs.Workloads[0]
	if len(w.Pods) != 2 || len(objs.Pods) != 2 {
		t.Fatalf("first pods %d, want 2", len(w.Pods))
	}
	seen := map[string]bool{}
	for i := range 6 {
		p, err := w.JobPod(i)
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 && (p.Name != w.Pods[i].Name || p.UID != w.Pods[i].UID) {
			t.Errorf("JobPod(%d) = %s, first pods have %s", i, p.Name, w.Pods[i].Name)
		}
		base, suffix, _ := strings.Cut(p.Name, "-")
		if base != "batch" || !generatedSuffix.MatchString(suffix) || seen[p.Name] {
			t.Errorf("attempt %d: name %s", i, p.Name)
		}
		seen[p.Name] = true
		if p.Labels["batch.kubernetes.io/job-name"] != "batch" || p.Labels["job-name"] != "batch" ||
			p.Labels["batch.kubernetes.io/controller-uid"] == "" || p.OwnerReferences[0].Kind != "Job" {
			t.Errorf("attempt %d: labels %v owner %+v", i, p.Labels, p.OwnerReferences)
		}
	}
}

func TestJobErrors(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"restartPolicy Always", strings.Replace(jobDoc, "Never", "Always", 1),
			`j.yaml: spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"`},
		{"work queue", strings.Replace(jobDoc, "  completions: 3\n", "", 1),
			"j.yaml: spec.completions: Required value: a work-queue Job (parallelism without completions) is not supported by podhost"},
		{"apps/v1", strings.Replace(jobDoc, "batch/v1", "apps/v1", 1),
			`j.yaml: apiVersion: Unsupported value: "apps/v1": supported values: "batch/v1" for a Job`},
		{"negative ttl", strings.Replace(jobDoc, "  parallelism: 2\n", "  parallelism: 2\n  ttlSecondsAfterFinished: -1\n", 1),
			"j.yaml: spec.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0"},
		{"template", strings.Replace(jobDoc, "image: busybox:1", "image: \"\"", 1),
			"j.yaml: spec.template.spec.containers[0].image: Required value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeObjects("j.yaml", []byte(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant %s", err, c.want)
			}
		})
	}
}
