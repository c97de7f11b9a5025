package runtime

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/leases"
	"github.com/podhost/podhost/internal/model/wellknown"
)

func TestOrphanLease(t *testing.T) {
	r := &Runtime{owner: processOwner()}
	r.inflight.Store("busy", true)
	now := time.Now()
	live := fmt.Sprintf("%d-%d", os.Getppid(), procStartTime(os.Getppid()))
	for _, tc := range []struct {
		name  string
		lease leases.Lease
		want  bool
	}{
		{"in flight here", leases.Lease{ID: "busy", CreatedAt: now, Labels: map[string]string{wellknown.LabelLeaseOwner: r.owner}}, false},
		{"ours, create over", leases.Lease{ID: "a", CreatedAt: now, Labels: map[string]string{wellknown.LabelLeaseOwner: r.owner}}, true},
		{"owner dead", leases.Lease{ID: "b", CreatedAt: now, Labels: map[string]string{wellknown.LabelLeaseOwner: "1-1"}}, true},
		{"owner alive", leases.Lease{ID: "c", CreatedAt: now, Labels: map[string]string{wellknown.LabelLeaseOwner: live}}, false},
		{"owner alive, too old", leases.Lease{ID: "d", CreatedAt: now.Add(-time.Hour), Labels: map[string]string{wellknown.LabelLeaseOwner: live}}, true},
		{"owner unparsable", leases.Lease{ID: "e", CreatedAt: now, Labels: map[string]string{wellknown.LabelLeaseOwner: "x"}}, false},
	} {
		if got := r.orphanLease(tc.lease, now); got != tc.want {
			t.Errorf("%s: orphan = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestProcStartTime(t *testing.T) {
	if procStartTime(os.Getpid()) == 0 {
		t.Fatal("no start time for this process")
	}
	if ownerAlive("999999999-5") {
		t.Fatal("a PID that cannot exist is alive")
	}
	if !ownerAlive(processOwner()) {
		t.Fatal("this process is not alive")
	}
}
