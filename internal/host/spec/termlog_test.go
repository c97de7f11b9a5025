package spec

import (
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
)

// The instance's termination-log file is bind-mounted read-write at
// terminationMessagePath, also with a read-only root filesystem; without a
// host file nothing is mounted.
func TestBuildTerminationLog(t *testing.T) {
	yes := true
	tests := []struct {
		name    string
		hostLog string
		path    string
		sc      *corev1.SecurityContext
		want    *specs.Mount
	}{
		{name: "default path", hostLog: "/pods/uid/containers/app/c1", path: "/dev/termination-log",
			want: &specs.Mount{Source: "/pods/uid/containers/app/c1", Destination: "/dev/termination-log", Type: "bind",
				Options: []string{"rbind", "rprivate", "rw"}}},
		{name: "custom path, read-only root", hostLog: "/pods/uid/containers/app/c1", path: "/tmp/msg/",
			sc: &corev1.SecurityContext{ReadOnlyRootFilesystem: &yes},
			want: &specs.Mount{Source: "/pods/uid/containers/app/c1", Destination: "/tmp/msg", Type: "bind",
				Options: []string{"rbind", "rprivate", "rw"}}},
		{name: "no host file", path: "/dev/termination-log"},
		{name: "no path", hostLog: "/pods/uid/containers/app/c1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod()
			c := testContainer(p)
			c.TerminationLog = tt.hostLog
			c.Container.TerminationMessagePath = tt.path
			c.Container.SecurityContext = tt.sc
			s, err := generate(t, p, c)
			if err != nil {
				t.Fatal(err)
			}
			dst := tt.path
			if tt.want != nil {
				dst = tt.want.Destination
			}
			got := mountAt(s, dst)
			if tt.want == nil {
				if got != nil && dst != "" {
					t.Fatalf("unexpected mount %+v", *got)
				}
				return
			}
			if got == nil {
				t.Fatalf("no mount at %s", dst)
			}
			eq(t, "mount", *got, *tt.want)
			if tt.sc != nil {
				eq(t, "read-only root", s.Root.Readonly, true)
			}
		})
	}
}

func TestBuildTerminationLogRelative(t *testing.T) {
	p := testPod()
	c := testContainer(p)
	c.TerminationLog = "/pods/uid/containers/app/c1"
	c.Container.TerminationMessagePath = "termination-log"
	if _, err := Build(p, c); err == nil {
		t.Fatal("want error for a relative terminationMessagePath")
	}
}
