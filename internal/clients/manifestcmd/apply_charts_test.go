package manifestcmd

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podhost/podhost/internal/clients/cmdutil"
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
			// ServiceAccount rights on a cluster's API server and its
			// APIService registers it with that server's aggregator; none
			// of them exists on one node, and each refusal says so. Its
			// ServiceAccount, Service and Deployment (docs 1, 7, 8) pass.
			file: "metrics-server-3.13.1.yaml",
			refused: []string{
				chartKindRefusal(2, "ClusterRole", rbacWhy),
				chartKindRefusal(3, "ClusterRole", rbacWhy),
				chartKindRefusal(4, "ClusterRoleBinding", rbacWhy),
				chartKindRefusal(5, "ClusterRoleBinding", rbacWhy),
				chartKindRefusal(6, "RoleBinding", rbacWhy),
				chartKindRefusal(9, "APIService", apiServiceWhy),
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

// chartKindRefusal is the refusal of a kind podhost does not take, in
// document doc of a chart's file (refusalsIn prefixes the file's display name).
func chartKindRefusal(doc int, kind, why string) string {
	return fmt.Sprintf("[doc %d] kind: Unsupported value: %q: not supported by podhost "+
		"(%s; only Pod, ConfigMap, Secret, Service, ServiceAccount, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job)", doc, kind, why)
}

// The reasons given for the cluster-only kinds of the charts.
const (
	rbacWhy       = "RBAC grants rights on a cluster's API server; podhost's pods get no ServiceAccount tokens and its kube API has no RBAC"
	apiServiceWhy = "an aggregated API served through a cluster's API server"
)

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
