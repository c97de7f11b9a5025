package volumes

import (
	"context"
	"errors"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/fsquota"
)

// fakeQuotas records what the volume manager asks of the project IDs.
type fakeQuotas struct {
	assigned []string
	released []types.UID
	dirGone  bool // the pod dir was gone when Release came
	pod      string
	err      error
}

func (q *fakeQuotas) Assign(_ *corev1.Pod, volume, dir string) fsquota.Method {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		panic("Assign before the directory exists: " + dir)
	}
	q.assigned = append(q.assigned, volume)
	return fsquota.MethodQuota
}

func (q *fakeQuotas) Release(uid types.UID) error {
	_, err := os.Lstat(q.pod)
	q.dirGone = errors.Is(err, os.ErrNotExist)
	q.released = append(q.released, uid)
	return q.err
}

// A disk emptyDir gets its project ID when it is set up, once (not a
// memory one, not again at the next Prepare); the IDs are released by
// Cleanup after the pod's directory is removed, and a release that fails
// fails Cleanup (housekeeping retries).
func TestEmptyDirQuota(t *testing.T) {
	m := New(t.TempDir())
	q := &fakeQuotas{}
	m.Quotas = q
	limit := resource.MustParse("1Mi")
	pod := emptyDirPod("u-quota", &limit)
	q.pod = m.PodDir(pod.UID)
	ctx := context.Background()
	for range 2 {
		if _, _, err := m.Prepare(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	if len(q.assigned) != 1 || q.assigned[0] != "disk" {
		t.Fatalf("assigned %v; want [disk] once", q.assigned)
	}
	q.err = errors.New("kept")
	if err := m.Cleanup(ctx, pod.UID); !errors.Is(err, q.err) {
		t.Fatalf("Cleanup = %v; want the release error", err)
	}
	q.err = nil
	if err := m.Cleanup(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if len(q.released) != 2 || q.released[1] != pod.UID || !q.dirGone {
		t.Fatalf("released %v (pod dir gone first: %v)", q.released, q.dirGone)
	}
}
