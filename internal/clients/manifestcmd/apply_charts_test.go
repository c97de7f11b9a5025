package manifestcmd

import (
	"bytes"
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/desired/source"
)

// TestApplyDryRunHelmCharts applies `helm template` output of real charts
// (testdata/charts, each with its chart, version and commit in a header)
// as `podhost apply --dry-run=client -f FILE` does, with the default
// manifest-dir Pod Security level (privileged: the zero Policy), and
// asserts the exact outcome: the objects printed, or every refusal line.
// Each refusal must name what one node cannot honour.
func TestApplyDryRunHelmCharts(t *testing.T) {
	tests := []struct {
		file    string
		out     []string // stdout lines
		refused []string // the error's lines (then out is empty)
	}{
		{
			// A Deployment and its Service, plus the chart's `helm test`
			// pods (helm template renders them unless --skip-tests).
			file: "podinfo-6.14.1.yaml",
			out: []string{
				"service/podinfo created (dry run)",
				"deployment/podinfo created (dry run)",
				"pod/podinfo-grpc-test-pmuam created (dry run)",
				"pod/podinfo-jwt-test-qccpv created (dry run)",
				"pod/podinfo-service-test-1dpvq created (dry run)",
			},
		},
		{
			// A DaemonSet with hostNetwork, hostPID, hostPath mounts with
			// HostToContainer propagation, a required node affinity and a
			// nodeSelector (kubernetes.io/os: linux).
			file: "prometheus-node-exporter-4.56.1.yaml",
			out: []string{
				"serviceaccount/prometheus-node-exporter created (dry run)",
				"service/prometheus-node-exporter created (dry run)",
				"daemonset/prometheus-node-exporter created (dry run)",
			},
		},
		{
			// An aggregated API server: its RBAC objects grant a
			// ServiceAccount rights on a cluster's API server (podhost's
			// pods get no tokens and its kube API has no RBAC) and its
			// APIService registers metrics.k8s.io, which podhost's kube API
			// serves itself: all accepted without effect (docs/fields.md).
			file: "metrics-server-3.13.1.yaml",
			out: []string{
				"serviceaccount/metrics-server created (dry run)",
				"clusterrole/system:metrics-server-aggregated-reader created (dry run)",
				"clusterrole/system:metrics-server created (dry run)",
				"clusterrolebinding/metrics-server:system:auth-delegator created (dry run)",
				"clusterrolebinding/system:metrics-server created (dry run)",
				"rolebinding/metrics-server-auth-reader created (dry run)",
				"service/metrics-server created (dry run)",
				"deployment/metrics-server created (dry run)",
				"apiservice/v1beta1.metrics.k8s.io created (dry run)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join("testdata", "charts", tt.file)
			opts := ApplyOptions{Files: []string{path}, ManifestDir: dir, DryRun: cmdutil.DryRunClient}
			var out, errOut bytes.Buffer
			_, err := Apply(context.Background(), opts, cmdutil.IOStreams{Out: &out, ErrOut: &errOut})
			var gotRefused []string
			if err != nil {
				gotRefused = strings.Split(err.Error(), "\n")
			}
			if !slices.Equal(gotRefused, refusalsIn(tt.file, tt.refused)) {
				t.Errorf("refusals:\n%s\nwant:\n%s", strings.Join(gotRefused, "\n"), strings.Join(refusalsIn(tt.file, tt.refused), "\n"))
			}
			if got := outLines(out.String()); !slices.Equal(got, tt.out) {
				t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), strings.Join(tt.out, "\n"))
			}
			if errOut.Len() != 0 {
				t.Errorf("stderr: %s", errOut.String())
			}
			if st := dirState(t, dir); len(st) != 0 {
				t.Errorf("a dry run wrote to the manifest dir: %v", st)
			}
		})
	}
}

func refusalsIn(file string, rs []string) []string {
	var out []string
	for _, r := range rs {
		out = append(out, file+": "+r)
	}
	return out
}

// outLines splits printed output into its lines (none for "").
func outLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// TestApplyIgnoredKinds: RBAC objects are written to the manifest dir as
// given (each in a file of its own: a cluster-scoped one has no namespace
// prefix), applying them again is Unchanged, an edit of the rules is
// Configured, and the dir's source reads them without an error.
func TestApplyIgnoredKinds(t *testing.T) {
	e := newEnv(t, map[string]string{}, map[string]string{
		"rbac.yaml": clusterRoleDoc + "---\n" + roleBindingDoc,
		"edit.yaml": strings.Replace(clusterRoleDoc, "verbs: [get]", "verbs: [get, list]", 1),
	})
	apply := func(file string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		opts := ApplyOptions{Files: []string{filepath.Join(e.inputs, file)}, ManifestDir: e.manifests}
		if _, err := Apply(context.Background(), opts, cmdutil.IOStreams{Out: &out, ErrOut: &errOut}); err != nil {
			t.Fatalf("apply %s: %v", file, err)
		}
		return out.String()
	}
	if got, want := apply("rbac.yaml"), "clusterrole/system:reader created\nrolebinding/reader created\n"; got != want {
		t.Errorf("first apply: %q, want %q", got, want)
	}
	want := map[string]string{"system:reader.clusterrole.yaml": clusterRoleDoc, "kube-system_reader.rolebinding.yaml": roleBindingDoc}
	if got := dirState(t, e.manifests); !maps.Equal(got, want) {
		t.Errorf("manifest dir: %q, want %q", got, want)
	}
	if got, want := apply("rbac.yaml"), "clusterrole/system:reader unchanged\nrolebinding/reader unchanged\n"; got != want {
		t.Errorf("second apply: %q, want %q", got, want)
	}
	if got, want := apply("edit.yaml"), "clusterrole/system:reader configured\n"; got != want {
		t.Errorf("edit: %q, want %q", got, want)
	}
	snap, err := source.Scan(e.manifests, false)
	if err != nil || len(snap.Errors) > 0 || len(snap.Ignored) != 2 || len(snap.Pods) > 0 {
		t.Errorf("scan: %v, errors %v, %d ignored objects, %d pods", err, snap.Errors, len(snap.Ignored), len(snap.Pods))
	}
}
