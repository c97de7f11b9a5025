package syncer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/model/wellknown"
)

func (h *fakeHost) PutLogRemoval(uid types.UID) error {
	if err := h.err("logRemoval"); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.logRemovals == nil {
		h.logRemovals = map[types.UID]bool{}
	}
	h.logRemovals[uid] = true
	return nil
}

func (h *fakeHost) DeleteLogRemoval(uid types.UID) error {
	if err := h.err("deleteLogRemoval"); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.logRemovals, uid)
	return nil
}

func (h *fakeHost) ListLogRemovals() ([]types.UID, error) {
	if err := h.err("listLogRemovals"); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []types.UID
	for uid := range h.logRemovals {
		out = append(out, uid)
	}
	return out, nil
}

func (h *fakeHost) recorded(uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logRemovals[uid]
}

// fakePodLogs keeps, per pod, the containers that have a log directory.
type fakePodLogs struct {
	mu   sync.Mutex
	rt   *fakeRuntime                  // if set, calls note the pod's containers left
	dirs map[types.UID]map[string]bool // pod -> containers with logs
	// calls: "<uid> keep=<names> containers=<n>" per RemovePod.
	calls []string
	busy  error // RemovePod's error while set (a log driver still writes)
	scans int   // RemovePods calls
}

func (l *fakePodLogs) write(uid types.UID, containers ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dirs == nil {
		l.dirs = map[types.UID]map[string]bool{}
	}
	if l.dirs[uid] == nil {
		l.dirs[uid] = map[string]bool{}
	}
	for _, c := range containers {
		l.dirs[uid][c] = true
	}
}

func (l *fakePodLogs) RemovePod(_ context.Context, uid types.UID, keep map[string]bool) (int, error) {
	left := -1
	if l.rt != nil {
		p, _ := l.rt.ListPod(context.Background(), uid)
		left = len(p.Containers)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fmt.Sprintf("%s keep=%s containers=%d", uid, strings.Join(setNames(keep), ","), left))
	if l.busy != nil {
		return 0, l.busy
	}
	n := 0
	for c := range l.dirs[uid] {
		if !keep[c] {
			delete(l.dirs[uid], c)
			n++
		}
	}
	return n, nil
}

// RemovePods is RemovePod for each (one scan: scans counts the calls).
func (l *fakePodLogs) RemovePods(ctx context.Context, uids []types.UID) map[types.UID]logs.Removal {
	l.mu.Lock()
	l.scans++
	l.mu.Unlock()
	out := map[types.UID]logs.Removal{}
	for _, uid := range uids {
		n, err := l.RemovePod(ctx, uid, nil)
		out[uid] = logs.Removal{Removed: n, Err: err}
	}
	return out
}

// has lists the containers of uid that have logs, sorted.
func (l *fakePodLogs) has(uid types.UID) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return setNames(l.dirs[uid])
}

func (l *fakePodLogs) callList() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

func setNames(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// loggedWorld: a synced pod of containers names that wrote logs.
func loggedWorld(t *testing.T, policy corev1.RestartPolicy, names ...string) (*world, *corev1.Pod) {
	t.Helper()
	w, pod := syncedWorld(t, policy, names...)
	w.logs.rt = w.rt
	w.logs.write(pod.UID, names...)
	return w, pod
}

// A deleted pod's logs go in its cleanup, once its containers are gone,
// and the record of the removal with them.
func TestDeletedPodLogsGoWithItsContainers(t *testing.T) {
	w, pod := loggedWorld(t, corev1.RestartPolicyAlways, "a", "b")
	w.obs.desired = false
	if err := terminateAll(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if got := w.logs.callList(); !slices.Equal(got, []string{"uid-1 keep= containers=0"}) {
		t.Fatalf("RemovePod calls %v, want one after every container went", got)
	}
	if len(w.logs.has(pod.UID)) != 0 || w.host.recorded(pod.UID) {
		t.Fatalf("logs %v, record %v left", w.logs.has(pod.UID), w.host.recorded(pod.UID))
	}
}

// A container that cannot be removed keeps every log of the pod; the
// record stays for the retry, which removes them.
func TestLogsStayWhileAContainerRemains(t *testing.T) {
	w, pod := loggedWorld(t, corev1.RestartPolicyAlways, "a")
	w.obs.desired = false
	w.rt.removeErr = errors.New("task still running")
	if err := terminateAll(t, w, pod); err == nil {
		t.Fatal("SyncTerminatedPod succeeded with a container left")
	}
	if len(w.logs.callList()) != 0 || !w.host.recorded(pod.UID) {
		t.Fatalf("calls %v, recorded %v: want no removal and the record kept", w.logs.callList(), w.host.recorded(pod.UID))
	}
	w.rt.removeErr = nil
	if err := w.s.SyncTerminatedPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if len(w.logs.has(pod.UID)) != 0 || w.host.recorded(pod.UID) {
		t.Fatal("retry left the logs or the record")
	}
}

// A removal the store cannot record (a full disk) still happens: the
// containers' removal frees disk.
func TestLogsGoWhenTheRemovalCannotBeRecorded(t *testing.T) {
	w, pod := loggedWorld(t, corev1.RestartPolicyAlways, "a")
	w.obs.desired = false
	w.host.fail["logRemoval"] = errors.New("disk full")
	if err := terminateAll(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if n := len(w.rt.pods[pod.UID].Containers); n != 0 || len(w.logs.has(pod.UID)) != 0 {
		t.Fatalf("%d containers and logs %v left", n, w.logs.has(pod.UID))
	}
}

// A removal the store cannot record that has to wait for a log driver is
// still retried by this podhost's housekeeping.
func TestUnrecordedWaitingRemovalIsRetried(t *testing.T) {
	w, pod := loggedWorld(t, corev1.RestartPolicyAlways, "a")
	w.obs.desired = false
	w.host.fail["logRemoval"] = errors.New("disk full")
	w.logs.busy = fmt.Errorf("%w (pid 7)", logs.ErrDriverWriting)
	if err := terminateAll(t, w, pod); err != nil {
		t.Fatal(err)
	}
	w.logs.busy = nil
	if err := w.s.CleanupLeaks(context.Background(), func(types.UID) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if len(w.logs.has(pod.UID)) != 0 {
		t.Fatalf("logs %v left", w.logs.has(pod.UID))
	}
}

// While a log driver still writes there, the logs stay but the cleanup
// succeeds (the worker finishes and frees the pod's name for a
// replacement), with one warning; the record stays. A same-UID pod applied
// again waits for the removal; housekeeping finishes it once the driver
// exited.
func TestLogRemovalWaitsForTheLogDriver(t *testing.T) {
	w, pod := loggedWorld(t, corev1.RestartPolicyAlways, "a")
	var logged strings.Builder
	w.s.log = slog.New(slog.NewTextHandler(&logged, nil))
	w.obs.desired = false
	w.logs.busy = fmt.Errorf("logs of pod %s: %w (pid 7)", pod.UID, logs.ErrDriverWriting)
	if err := terminateAll(t, w, pod); err != nil {
		t.Fatalf("cleanup failed on a busy log driver: %v", err)
	}
	if err := w.s.SyncTerminatedPod(context.Background(), pod); err != nil {
		t.Fatalf("second cleanup: %v", err)
	}
	if !w.host.recorded(pod.UID) || len(w.logs.has(pod.UID)) != 1 {
		t.Fatal("want the logs and the record kept")
	}
	if err := w.s.CleanupLeaks(context.Background(), func(types.UID) bool { return false }); err != nil {
		t.Fatalf("housekeeping failed on a busy log driver: %v", err)
	}
	if n := strings.Count(logged.String(), "pid 7"); n != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", n, logged.String())
	}
	w.obs.desired = true
	if _, err := syncOnce(t, w, pod); !errors.Is(err, logs.ErrDriverWriting) {
		t.Fatalf("same UID applied again started with the old logs pending: %v", err)
	}
	w.logs.busy = nil
	w.obs.desired = false
	if err := w.s.CleanupLeaks(context.Background(), func(types.UID) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if len(w.logs.has(pod.UID)) != 0 || w.host.recorded(pod.UID) {
		t.Fatalf("after the driver exited: logs %v, recorded %v", w.logs.has(pod.UID), w.host.recorded(pod.UID))
	}
}

// An orphan's cleanup (SyncTerminatingRuntimePod) does not fail on a busy
// log driver either.
func TestOrphanCleanupDoesNotWaitForTheLogDriver(t *testing.T) {
	w, pod := loggedWorld(t, corev1.RestartPolicyAlways, "a")
	w.logs.busy = fmt.Errorf("%w (pid 7)", logs.ErrDriverWriting)
	running, _ := w.rt.ListPod(context.Background(), pod.UID)
	if err := w.s.SyncTerminatingRuntimePod(context.Background(), running); err != nil {
		t.Fatal(err)
	}
	if !w.host.recorded(pod.UID) || len(w.rt.pods[pod.UID].Containers) != 0 {
		t.Fatal("want the containers gone and the record kept")
	}
}

// A finished pod still wanted keeps its logs (and exited containers), as
// does one applied again while it terminated: the new run's instances
// write the next restart's files, not the old ones.
func TestTerminatedPodStillDesiredKeepsLogs(t *testing.T) {
	w, pod := loggedWorld(t, corev1.RestartPolicyAlways, "a")
	if err := terminateAll(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if len(w.logs.callList()) != 0 || w.host.recorded(pod.UID) || !slices.Equal(w.logs.has(pod.UID), []string{"a"}) {
		t.Fatalf("calls %v recorded %v logs %v", w.logs.callList(), w.host.recorded(pod.UID), w.logs.has(pod.UID))
	}
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	c := w.rt.pods[pod.UID].Containers
	if got := c[len(c)-1].Labels[wellknown.LabelRestartCount]; got != "1" {
		t.Fatalf("new run's restart count %s, want 1 (its own log file)", got)
	}
}

// An orphan's cleanup (manifest deleted while podhost was down) removes
// its logs.
func TestOrphanLogsGo(t *testing.T) {
	w, pod := loggedWorld(t, corev1.RestartPolicyAlways, "a")
	running, _ := w.rt.ListPod(context.Background(), pod.UID)
	if err := w.s.SyncTerminatingRuntimePod(context.Background(), running); err != nil {
		t.Fatal(err)
	}
	if len(w.logs.has(pod.UID)) != 0 || w.host.recorded(pod.UID) {
		t.Fatal("orphan's logs or record left")
	}
}

// leftRemovalWorld: a pod "a" not started yet, with logs of its UID and
// the record of their removal (a podhost died during its cleanup).
func leftRemovalWorld() (*world, *corev1.Pod) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	w.logs.rt = w.rt
	w.logs.write(pod.UID, "a")
	w.host.logRemovals = map[types.UID]bool{pod.UID: true}
	return w, pod
}

// A podhost died after a deleted pod's containers went, before its logs:
// the pod, applied again with the same UID, starts only once they are gone.
func TestSyncPodFinishesALeftLogRemoval(t *testing.T) {
	w, pod := leftRemovalWorld()
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if got := w.logs.callList(); !slices.Equal(got, []string{"uid-1 keep= containers=0"}) {
		t.Fatalf("RemovePod calls %v, want one before the first container", got)
	}
	if len(w.rt.pods[pod.UID].Containers) != 1 || w.host.recorded(pod.UID) {
		t.Fatal("want the pod started and the record gone")
	}
	if _, err := syncOnce(t, w, pod); err != nil || len(w.logs.callList()) != 1 {
		t.Fatalf("second sync: %v, calls %v", err, w.logs.callList())
	}
}

// Died half way: the pod applied again still has container a, not b. a's
// logs stay with it, b's go (its next instance starts at restart 0).
func TestSyncPodKeepsTheLogsOfContainersLeft(t *testing.T) {
	w, pod := loggedWorld(t, corev1.RestartPolicyAlways, "a", "b")
	ctx := context.Background()
	for _, c := range w.rt.pods[pod.UID].Containers {
		if c.Name == "b" {
			_ = w.rt.RemoveContainer(ctx, c.ID)
			break
		}
	}
	w.host.logRemovals = map[types.UID]bool{pod.UID: true}
	w.s.removals = logRemovals{} // a new podhost reads the records again
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if got := w.logs.has(pod.UID); !slices.Equal(got, []string{"a"}) || w.host.recorded(pod.UID) {
		t.Fatalf("logs %v recorded %v; want a's kept, b's and the record gone", got, w.host.recorded(pod.UID))
	}
}

// Housekeeping removes the recorded logs of pods that are gone, not those
// of active ones (their worker finishes the removal).
func TestCleanupLeaksFinishesLogRemovals(t *testing.T) {
	w := newWorld()
	w.logs.write("gone", "a")
	w.logs.write("active", "a")
	w.host.logRemovals = map[types.UID]bool{"gone": true, "active": true}
	w.logs.write("gone-too", "a")
	w.host.logRemovals["gone-too"] = true
	if err := w.s.CleanupLeaks(context.Background(), func(uid types.UID) bool { return uid == "active" }); err != nil {
		t.Fatal(err)
	}
	if w.logs.scans != 1 {
		t.Fatalf("%d looks for running log drivers, want one for both gone pods", w.logs.scans)
	}
	if err := w.s.CleanupLeaks(context.Background(), func(uid types.UID) bool { return uid == "active" }); err != nil || w.logs.scans != 1 {
		t.Fatalf("a pass with only active pods pending looked again: %v, %d", err, w.logs.scans)
	}
	if len(w.logs.has("gone")) != 0 || w.host.recorded("gone") {
		t.Fatal("gone pod's logs or record left")
	}
	if len(w.logs.has("active")) != 1 || !w.host.recorded("active") {
		t.Fatal("active pod's logs or record removed")
	}
}

// Log removal records that cannot be read fail no SyncPod: the pod starts
// (the read is tried again at the next sync), and a deleted pod's cleanup
// still records and removes its logs.
func TestUnreadableLogRemovalsHoldNoPod(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	w.logs.rt = w.rt
	w.host.fail["listLogRemovals"] = errors.New("read state.db: input/output error")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatalf("SyncPod failed on unreadable records: %v", err)
	}
	if n := len(w.rt.pods[pod.UID].Containers); n != 1 {
		t.Fatalf("%d containers, want the pod started", n)
	}
	w.logs.write(pod.UID, "a")
	w.obs.desired = false
	if err := terminateAll(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if len(w.logs.has(pod.UID)) != 0 || w.host.recorded(pod.UID) {
		t.Fatalf("logs %v, record %v left", w.logs.has(pod.UID), w.host.recorded(pod.UID))
	}
	// Readable again: a record is found and finished before the next start.
	delete(w.host.fail, "listLogRemovals")
	other := worldPod(corev1.RestartPolicyAlways, "a")
	other.UID = "uid-2"
	w.host.logRemovals[other.UID] = true
	w.logs.write(other.UID, "a")
	w.obs.desired = true
	if _, err := syncOnce(t, w, other); err != nil {
		t.Fatal(err)
	}
	if len(w.logs.has(other.UID)) != 0 || w.host.recorded(other.UID) {
		t.Fatal("the record read later was not finished")
	}
}

// A pod applied again with the same UID starts although, its old logs
// removed, the record of their removal cannot be deleted (a full disk);
// its next syncs do not remove its new logs.
func TestSyncPodStartsWhenTheRecordCannotBeDropped(t *testing.T) {
	w, pod := leftRemovalWorld()
	w.host.fail["deleteLogRemoval"] = errors.New("no space left on device")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatalf("SyncPod failed on the record's deletion: %v", err)
	}
	if len(w.rt.pods[pod.UID].Containers) != 1 || len(w.logs.has(pod.UID)) != 0 {
		t.Fatal("want the old logs gone and the pod started")
	}
	w.logs.write(pod.UID, "a")
	if _, err := syncOnce(t, w, pod); err != nil || len(w.logs.callList()) != 1 || len(w.logs.has(pod.UID)) != 1 {
		t.Fatalf("second sync: %v, calls %v, logs %v", err, w.logs.callList(), w.logs.has(pod.UID))
	}
}
