package fsquota

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

// memStore is the state db's quotas bucket in memory.
type memStore struct {
	recs    map[string]records.QuotaRecord
	deleted []string
}

func (s *memStore) AllocateQuota(want records.QuotaRecord, pick func([]records.QuotaRecord) (uint32, error)) (records.QuotaRecord, error) {
	if r, ok := s.recs[want.Key()]; ok {
		return r, nil
	}
	var used []records.QuotaRecord
	for _, r := range s.recs {
		used = append(used, r)
	}
	id, err := pick(used)
	if err != nil {
		return want, err
	}
	want.ProjectID = id
	s.recs[want.Key()] = want
	return want, nil
}
func (s *memStore) DeleteQuota(key string) error {
	s.deleted = append(s.deleted, key)
	delete(s.recs, key)
	return nil
}
func (s *memStore) ListQuotas() ([]records.QuotaRecord, error) {
	var out []records.QuotaRecord
	for _, r := range s.recs {
		out = append(out, r)
	}
	return out, nil
}

// fakeKernel is a filesystem with project quotas: IDs set per directory,
// usage per ID.
type fakeKernel struct {
	unsupported error
	setErr      error
	projects    map[string]uint32
	usage       map[uint32][2]int64
}

func (k *fakeKernel) Supported(string) error { return k.unsupported }
func (k *fakeKernel) Project(dir string) (uint32, bool, error) {
	id := k.projects[dir]
	return id, id != 0, nil
}
func (k *fakeKernel) SetProject(dir string, id uint32) error {
	if k.setErr != nil {
		return k.setErr
	}
	k.projects[dir] = id
	return nil
}
func (k *fakeKernel) Usage(_ string, id uint32) (int64, int64, error) {
	u := k.usage[id]
	return u[0], u[1], nil
}

func newTest(t *testing.T, reserved string) (*Manager, *memStore, *fakeKernel) {
	t.Helper()
	projid := filepath.Join(t.TempDir(), "projid")
	if err := os.WriteFile(projid, []byte(reserved), 0o644); err != nil {
		t.Fatal(err)
	}
	st := &memStore{recs: map[string]records.QuotaRecord{}}
	k := &fakeKernel{projects: map[string]uint32{}, usage: map[uint32][2]int64{}}
	m, err := New(st, Options{Kernel: k, Reserved: []string{projid, filepath.Join(t.TempDir(), "absent")}})
	if err != nil {
		t.Fatal(err)
	}
	return m, st, k
}

func userNSPod(uid string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = "p-"+uid, "default", types.UID("uid-"+uid)
	f := false
	p.Spec.HostUsers = &f
	return p
}

// An emptyDir of a pod in its own user namespace gets the lowest ID from
// FirstID that is neither reserved by /etc/projid nor in use on the
// filesystem nor recorded, set on its directory, and is measured by it.
func TestAssignAndUsage(t *testing.T) {
	m, st, k := newTest(t, "# comment\nbackup:1048577\n1048579:/srv/x\nnotanid\n")
	k.usage[1048578] = [2]int64{4096, 1} // left over on the disk, unrecorded
	dirA, dirB := t.TempDir(), t.TempDir()
	if got := m.Assign(userNSPod("a"), "scratch", dirA); got != MethodQuota {
		t.Fatalf("Assign = %q", got)
	}
	if k.projects[dirA] != 1048580 || st.recs["uid-a/scratch"].ProjectID != 1048580 {
		t.Fatalf("dir ID %d, record %+v; want 1048580 (1048577, 1048579 reserved, 1048578 in use)", k.projects[dirA], st.recs)
	}
	if got := m.Assign(userNSPod("b"), "scratch", dirB); got != MethodQuota || k.projects[dirB] != 1048581 {
		t.Fatalf("second Assign = %q, ID %d; want 1048581", got, k.projects[dirB])
	}
	if m.Count() != 2 {
		t.Fatalf("Count = %d, want 2", m.Count())
	}
	k.usage[1048580] = [2]int64{5 << 20, 7}
	if b, i, ok, err := m.Usage("uid-a", "scratch"); !ok || err != nil || b != 5<<20 || i != 7 {
		t.Fatalf("Usage = %d, %d, %v, %v", b, i, ok, err)
	}
	if _, _, ok, err := m.Usage("uid-a", "other"); ok || err != nil {
		t.Fatalf("Usage of a volume without ID: ok %v, %v", ok, err)
	}
	k.projects[dirA] = 0 // the directory made again without its ID: walk it
	if _, _, ok, err := m.Usage("uid-a", "scratch"); ok || err != nil {
		t.Fatalf("Usage of a directory without its ID: ok %v, %v", ok, err)
	}
}

// Pods sharing the host's user namespace, filesystems without project
// quotas and a failed ioctl all leave the volume walked, with nothing
// recorded (the failed set up's record rolled back).
func TestAssignWalks(t *testing.T) {
	m, st, k := newTest(t, "")
	host := userNSPod("h")
	host.Spec.HostUsers = nil
	if got := m.Assign(host, "v", t.TempDir()); got != MethodWalk {
		t.Fatalf("hostUsers unset: %q", got)
	}
	tr := true
	host.Spec.HostUsers = &tr
	if got := m.Assign(host, "v", t.TempDir()); got != MethodWalk {
		t.Fatalf("hostUsers true: %q", got)
	}
	k.unsupported = errors.New("not mounted prjquota")
	if got := m.Assign(userNSPod("u"), "v", t.TempDir()); got != MethodWalk {
		t.Fatalf("unsupported: %q", got)
	}
	k.unsupported, k.setErr = nil, errors.New("EPERM")
	if got := m.Assign(userNSPod("s"), "v", t.TempDir()); got != MethodWalk {
		t.Fatalf("SetProject failed: %q", got)
	}
	if len(st.recs) != 0 || len(k.projects) != 0 || len(st.deleted) != 1 || st.deleted[0] != "uid-s/v" {
		t.Fatalf("records %+v, projects %v, deleted %v; want the failed one rolled back", st.recs, k.projects, st.deleted)
	}
	if _, _, ok, _ := m.Usage("uid-s", "v"); ok {
		t.Fatal("Usage of a rolled back volume")
	}
}

// An ID is released only once its directory is gone; New releases the
// records of directories removed while podhost was down.
func TestRelease(t *testing.T) {
	m, st, _ := newTest(t, "")
	root := t.TempDir()
	dir := filepath.Join(root, "vol")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m.Assign(userNSPod("a"), "v", dir)
	if err := m.Release("uid-a"); err == nil || !strings.Contains(err.Error(), "still there") || len(st.recs) != 1 {
		t.Fatalf("Release with the directory there: %v, records %+v", err, st.recs)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := m.Release("uid-a"); err != nil || len(st.recs) != 0 {
		t.Fatalf("Release: %v, records %+v", err, st.recs)
	}
	st.recs["uid-b/v"] = records.QuotaRecord{UID: "uid-b", Volume: "v", Path: dir, ProjectID: FirstID}
	st.recs["uid-c/v"] = records.QuotaRecord{UID: "uid-c", Volume: "v", Path: root, ProjectID: FirstID + 1}
	if _, err := New(st, Options{Kernel: &fakeKernel{}, Reserved: []string{}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.recs["uid-b/v"]; ok || len(st.recs) != 1 {
		t.Fatalf("records after New: %+v; want the one whose directory is gone released", st.recs)
	}
}

// When every candidate is in use on the filesystem, allocation stops
// after maxInUseSkipped and the volume is walked.
func TestPickBounded(t *testing.T) {
	m, st, k := newTest(t, "")
	for id := uint32(FirstID); id <= FirstID+maxInUseSkipped+1; id++ {
		k.usage[id] = [2]int64{0, 1}
	}
	if got := m.Assign(userNSPod("a"), "v", t.TempDir()); got != MethodWalk || len(st.recs) != 0 {
		t.Fatalf("Assign = %q, records %+v", got, st.recs)
	}
}

func TestReservedTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "projid")
	if err := os.WriteFile(p, []byte(strings.Repeat("x:1\n", maxReservedBytes/4+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := reservedIDs([]string{p}); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("err = %v; want one naming %s", err, p)
	}
}

// The structs passed to the kernel have its sizes (linux/fs.h, linux/quota.h).
func TestABISizes(t *testing.T) {
	if s := unsafe.Sizeof(fsxattr{}); s != 28 {
		t.Errorf("fsxattr is %d bytes, want 28", s)
	}
	if s := unsafe.Sizeof(dqblk{}); s != 72 {
		t.Errorf("if_dqblk is %d bytes, want 72", s)
	}
	if s := unsafe.Sizeof(dqinfo{}); s != 24 {
		t.Errorf("if_dqinfo is %d bytes, want 24", s)
	}
	if c := qcmd(qGetQuota, prjQuota); c != 0x80000702 {
		t.Errorf("QCMD(Q_GETQUOTA, PRJQUOTA) = %#x", c)
	}
}
