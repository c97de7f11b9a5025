package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

func openTest(t testing.TB) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "sub", "state.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestOpenMigratesEmptyFile(t *testing.T) {
	db := openTest(t)
	v, err := db.SchemaVersion()
	if err != nil || v != SchemaVersion {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, SchemaVersion)
	}
	err = db.bolt.View(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketWorkers, bucketAllocations, bucketSandboxes, bucketStatuses, bucketEvents, bucketManifests} {
			if tx.Bucket(b) == nil {
				return fmt.Errorf("bucket %s missing", b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Reopen: idempotent, data kept.
	if err := db.SetBootID("boot-1"); err != nil {
		t.Fatal(err)
	}
	path := db.Path()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db2.Close()
	if id, err := db2.BootID(); err != nil || id != "boot-1" {
		t.Fatalf("BootID = %q, %v", id, err)
	}
}

func TestMigrationsAreConsecutive(t *testing.T) {
	for i, m := range migrations {
		if m.version != i+1 {
			t.Fatalf("migrations[%d].version = %d, want %d", i, m.version, i+1)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		v, _ := json.Marshal(SchemaVersion + 1)
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, v)
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	_, err = Open(path)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open err = %v, want ErrSchemaTooNew", err)
	}
	t.Log(err)
}

func TestOpenLockedFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	_, err = open(path, 100*time.Millisecond)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open err = %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("second Open took %v", d)
	}
	t.Log(err)
}

func TestWorkerRoundTrip(t *testing.T) {
	db := openTest(t)
	now := time.Now().UTC().Round(0)
	r := records.WorkerRecord{UID: "u1", FullName: "default/web", Phase: records.PhaseTerminating, GracePeriod: 30, Pod: []byte(`{"a":1}`), UpdatedAt: now}
	if err := db.PutWorker(r); err != nil {
		t.Fatal(err)
	}
	if err := db.PutWorker(records.WorkerRecord{UID: "u0", Phase: records.PhaseSyncing}); err != nil {
		t.Fatal(err)
	}
	got, err := db.ListWorkers()
	if err != nil || len(got) != 2 {
		t.Fatalf("ListWorkers = %v, %v", got, err)
	}
	if got[0].UID != "u0" || !reflect.DeepEqual(got[1], r) {
		t.Fatalf("ListWorkers = %+v", got)
	}
	if err := db.DeleteWorker("u1"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteWorker("absent"); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.ListWorkers(); len(got) != 1 {
		t.Fatalf("after delete: %v", got)
	}
	if err := db.PutWorker(records.WorkerRecord{}); err == nil {
		t.Fatal("empty UID accepted")
	}
}

func TestAllocationRoundTrip(t *testing.T) {
	db := openTest(t)
	a := records.Allocation{
		UID: "u1", FullName: "default/web",
		Requests:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		HostPorts: []records.HostPort{{HostIP: "0.0.0.0", Protocol: "TCP", Port: 8080}},
	}
	if err := db.PutAllocation(a); err != nil {
		t.Fatal(err)
	}
	got, err := db.ListAllocations()
	if err != nil || len(got) != 1 {
		t.Fatalf("ListAllocations = %v, %v", got, err)
	}
	if !got[0].Requests.Cpu().Equal(resource.MustParse("250m")) || !got[0].Requests.Memory().Equal(resource.MustParse("64Mi")) ||
		!reflect.DeepEqual(got[0].HostPorts, a.HostPorts) || got[0].FullName != a.FullName {
		t.Fatalf("round trip: %+v", got[0])
	}
	if err := db.DeleteAllocation("u1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.ListAllocations(); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
}

func TestSandboxRoundTrip(t *testing.T) {
	db := openTest(t)
	s := records.SandboxRecord{
		ID: "sb1", PodUID: "u1", FullName: "default/web", State: records.SandboxReady,
		NetNS: "/run/podhost/netns/sb1", IPC: "/run/podhost/ipc/sb1", UTS: "/run/podhost/uts/sb1", Dir: "/run/podhost/sb1",
		CNIResult: []byte(`{"cniVersion":"1.0.0"}`), IPs: []string{"10.88.0.2"},
		Ports:  []records.PortMapping{{HostPort: 8080, ContainerPort: 80, Protocol: "TCP", HostIP: "127.0.0.1"}},
		Cgroup: "podhost-podu1.slice", BootID: "b", CreatedAt: time.Now().UTC().Round(0),
	}
	if err := db.PutSandbox(s); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetSandbox("sb1")
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("GetSandbox = %+v, %v", got, err)
	}
	if _, err := db.GetSandbox("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetSandbox(nope) err = %v", err)
	}
	list, err := db.ListSandboxes()
	if err != nil || len(list) != 1 || !reflect.DeepEqual(list[0], s) {
		t.Fatalf("ListSandboxes = %v, %v", list, err)
	}
	if err := db.DeleteSandbox("sb1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetSandbox("sb1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete err = %v", err)
	}
}

func TestStatusRoundTrip(t *testing.T) {
	db := openTest(t)
	ts := metav1.NewTime(time.Now().Truncate(time.Second))
	s := corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: "10.88.0.2", StartTime: &ts,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ts}},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "web", Ready: true, RestartCount: 2,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ts}},
		}},
	}
	if err := db.PutStatus("u1", s); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetStatus("u1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.ContainerStatuses, s.ContainerStatuses) || got.Phase != s.Phase || !got.StartTime.Equal(s.StartTime) {
		t.Fatalf("GetStatus = %+v", got)
	}
	all, err := db.ListStatuses()
	if err != nil || len(all) != 1 || all["u1"].PodIP != "10.88.0.2" {
		t.Fatalf("ListStatuses = %v, %v", all, err)
	}
	if err := db.DeleteStatus("u1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetStatus("u1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete err = %v", err)
	}
}

func TestEventsCapped(t *testing.T) {
	db := openTest(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = records.MaxEventsPerPod + 37
	for i := range n {
		e := records.Event{Time: base.Add(time.Duration(i) * time.Second), Type: "Normal", Reason: "R", Message: fmt.Sprint(i)}
		if err := db.AddEvent("u1", e); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AddEvent("u2", records.Event{Reason: "Other"}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Events("u1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != records.MaxEventsPerPod {
		t.Fatalf("len = %d, want %d", len(got), records.MaxEventsPerPod)
	}
	if got[0].Message != fmt.Sprint(n-records.MaxEventsPerPod) || got[len(got)-1].Message != fmt.Sprint(n-1) {
		t.Fatalf("kept %s..%s", got[0].Message, got[len(got)-1].Message)
	}
	if !got[0].Time.Equal(base.Add(time.Duration(n-records.MaxEventsPerPod) * time.Second)) {
		t.Fatalf("time = %v", got[0].Time)
	}
	if other, _ := db.Events("u2"); len(other) != 1 {
		t.Fatalf("u2 events = %v", other)
	}
	if none, err := db.Events("absent"); err != nil || len(none) != 0 {
		t.Fatalf("absent events = %v, %v", none, err)
	}
	if err := db.DeleteEvents("u1"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteEvents("u1"); err != nil {
		t.Fatalf("second DeleteEvents: %v", err)
	}
	if got, _ := db.Events("u1"); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
}

func TestPurgePod(t *testing.T) {
	db := openTest(t)
	for _, uid := range []types.UID{"u1", "u2"} {
		err := db.Update(func(tx *Tx) error {
			return errors.Join(
				tx.PutWorker(records.WorkerRecord{UID: uid, Phase: records.PhaseTerminated}),
				tx.PutAllocation(records.Allocation{UID: uid}),
				tx.PutStatus(uid, corev1.PodStatus{Phase: corev1.PodSucceeded}),
				tx.AddEvent(uid, records.Event{Reason: "Killing"}),
				tx.PutSandbox(records.SandboxRecord{ID: "sb-" + string(uid), PodUID: uid}),
			)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PurgePod("u1"); err != nil {
		t.Fatal(err)
	}
	ws, _ := db.ListWorkers()
	as, _ := db.ListAllocations()
	ss, _ := db.ListStatuses()
	ev1, _ := db.Events("u1")
	ev2, _ := db.Events("u2")
	sbs, _ := db.ListSandboxes()
	// A purged pod's events stay (ExpireEvents removes them later).
	if len(ws) != 1 || ws[0].UID != "u2" || len(as) != 1 || len(ss) != 1 || len(ev1) != 1 || len(ev2) != 1 || len(sbs) != 2 {
		t.Fatalf("after purge: workers=%v allocs=%v statuses=%v ev1=%v ev2=%v sandboxes=%v", ws, as, ss, ev1, ev2, sbs)
	}
}

// RecordedPods names every UID with any record PurgePod deletes (not
// sandbox records, not events: they outlive the pod), and none once purged.
func TestRecordedPods(t *testing.T) {
	db := openTest(t)
	err := db.Update(func(tx *Tx) error {
		return errors.Join(
			tx.PutWorker(records.WorkerRecord{UID: "w", Phase: records.PhaseTerminated}),
			tx.PutAllocation(records.Allocation{UID: "a"}),
			tx.PutStatus("s", corev1.PodStatus{Phase: corev1.PodSucceeded}),
			tx.AddEvent("e", records.Event{Reason: "Killing"}),
			tx.PutSandbox(records.SandboxRecord{ID: "sb", PodUID: "sandbox-only"}),
		)
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.RecordedPods()
	if err != nil {
		t.Fatal(err)
	}
	want := map[types.UID]bool{"w": true, "a": true, "s": true}
	if !maps.Equal(got, want) {
		t.Fatalf("RecordedPods() = %v, want %v", got, want)
	}
	for uid := range want {
		if err := db.PurgePod(uid); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := db.RecordedPods(); len(got) != 0 {
		t.Fatalf("after purging each: %v", got)
	}
}

func TestUpdateIsAtomic(t *testing.T) {
	db := openTest(t)
	boom := errors.New("boom")
	err := db.Update(func(tx *Tx) error {
		if err := tx.PutWorker(records.WorkerRecord{UID: "u1"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if ws, _ := db.ListWorkers(); len(ws) != 0 {
		t.Fatalf("rolled-back write visible: %v", ws)
	}
}

func TestParallelWriters(t *testing.T) {
	db := openTest(t)
	const writers, each = 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*3)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				uid := types.UID(fmt.Sprintf("w%d-%d", w, i))
				errs <- db.PutWorker(records.WorkerRecord{UID: uid, Phase: records.PhaseSyncing})
				errs <- db.AddEvent("shared", records.Event{Reason: string(uid)})
				if _, err := db.ListWorkers(); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ws, _ := db.ListWorkers()
	ev, _ := db.Events("shared")
	if len(ws) != writers*each || len(ev) != min(writers*each, records.MaxEventsPerPod) {
		t.Fatalf("workers=%d events=%d", len(ws), len(ev))
	}
}

func TestManifestRecords(t *testing.T) {
	db := openTest(t)
	if err := db.PutManifest("", []byte("x")); err == nil {
		t.Fatal("empty path accepted")
	}
	for _, r := range []records.ManifestRecord{{Path: "/m/a.yaml", Data: []byte("a: 1\n")}, {Path: "/m/b.yaml", Data: []byte("b\x00\xff")}, {Path: "/m/a.yaml", Data: []byte("a: 2\n")}} {
		if err := db.PutManifest(r.Path, r.Data); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.ListManifests()
	want := []records.ManifestRecord{{Path: "/m/a.yaml", Data: []byte("a: 2\n")}, {Path: "/m/b.yaml", Data: []byte("b\x00\xff")}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ListManifests = %+v, %v; want %+v", got, err, want)
	}
	if err := db.DeleteManifest("/m/a.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteManifest("/m/absent.yaml"); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.ListManifests(); len(got) != 1 || got[0].Path != "/m/b.yaml" {
		t.Fatalf("after delete: %+v", got)
	}
}

// A v1 file (written by the previous podhost) migrates to v2 with its data
// kept and the manifests bucket added.
func TestMigrateV1ToV2(t *testing.T) {
	db := openAtVersion(t, 1, func(tx *bolt.Tx) error {
		return putJSON(tx, bucketMeta, keyBootID, "boot-v1")
	})
	defer db.Close()
	if v, _ := db.SchemaVersion(); v != SchemaVersion {
		t.Fatalf("version %d, want %d", v, SchemaVersion)
	}
	if id, _ := db.BootID(); id != "boot-v1" {
		t.Fatalf("boot id %q lost in migration", id)
	}
	if err := db.PutManifest("/m/a.yaml", []byte("x")); err != nil {
		t.Fatalf("manifests bucket after migration: %v", err)
	}
	if err := db.PutRollout(records.RolloutRecord{FullName: "default/a"}); err != nil {
		t.Fatalf("rollouts bucket after migration: %v", err)
	}
}

// PodSandboxes returns one pod's records only, even when another record
// mentions the UID elsewhere (its name, here).
func TestPodSandboxes(t *testing.T) {
	db := openTest(t)
	for _, s := range []records.SandboxRecord{
		{ID: "a1", PodUID: "u1", FullName: "default/a"},
		{ID: "a2", PodUID: "u1", FullName: "default/a"},
		{ID: "b1", PodUID: "u2", FullName: "default/u1"},
		{ID: "c1", PodUID: "u10", FullName: "default/c"},
	} {
		if err := db.PutSandbox(s); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		uid  types.UID
		want []string
	}{
		{"u1", []string{"a1", "a2"}},
		{"u2", []string{"b1"}},
		{"u10", []string{"c1"}},
		{"nope", nil},
		{"", nil},
	}
	for _, c := range cases {
		got, err := db.PodSandboxes(c.uid)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		if !reflect.DeepEqual(ids, c.want) {
			t.Errorf("PodSandboxes(%q) = %v, want %v", c.uid, ids, c.want)
		}
	}
}

// openAtVersion writes a file as a podhost at schema version v left it (the
// first v migrations, then seed) and opens it, migrating it to SchemaVersion.
func openAtVersion(t *testing.T, v int, seed func(tx *bolt.Tx) error) *DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		for _, m := range migrations[:v] {
			if err := m.apply(tx); err != nil {
				return err
			}
		}
		if err := seed(tx); err != nil {
			return err
		}
		return putJSON(tx, bucketMeta, keySchemaVersion, v)
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = bdb.Close()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return db
}
