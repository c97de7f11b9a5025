package runtime

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// fakeReap is a container's labels and task; calls lists what was done.
type fakeReap struct {
	labelsOf map[string]string // nil: no such container
	task     bool
	calls    []string
	failSet  error
	failDel  error
}

func (f *fakeReap) labels(_ context.Context, id string) (map[string]string, error) {
	f.calls = append(f.calls, "labels")
	if f.labelsOf == nil {
		return nil, errdefs.ErrNotFound
	}
	return maps.Clone(f.labelsOf), nil
}

func (f *fakeReap) setLabels(_ context.Context, id string, l map[string]string) error {
	f.calls = append(f.calls, "set "+strings.Join(slices.Sorted(maps.Keys(l)), ","))
	if f.failSet != nil {
		return f.failSet
	}
	maps.Copy(f.labelsOf, l)
	return nil
}

func (f *fakeReap) deleteTask(context.Context, string) error {
	f.calls = append(f.calls, "delete")
	if f.failDel != nil {
		return f.failDel
	}
	f.task = false
	return nil
}

var exitedAt = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

func ours() map[string]string { return map[string]string{wellknown.LabelPodUID: "u1"} }

// The exit is recorded before the task is deleted; with the exit
// recorded already, only the delete.
func TestReapRecordsThenDeletes(t *testing.T) {
	f := &fakeReap{labelsOf: ours(), task: true}
	if err := reap(context.Background(), f, "c1", nil, exitRecord{Code: 1, At: exitedAt}); err != nil {
		t.Fatal(err)
	}
	want := []string{"labels", "set " + wellknown.LabelExitCode + "," + wellknown.LabelFinishedAt, "delete"}
	if !slices.Equal(f.calls, want) || f.task {
		t.Fatalf("calls %v (task left: %v), want %v", f.calls, f.task, want)
	}
	if f.labelsOf[wellknown.LabelExitCode] != "1" || f.labelsOf[wellknown.LabelFinishedAt] != "2026-01-02T03:04:05.000000006Z" {
		t.Fatalf("labels %v", f.labelsOf)
	}
	// A second reap (another reader; a crash after the record): no new record.
	f.calls, f.task = nil, true
	if err := reap(context.Background(), f, "c1", maps.Clone(f.labelsOf), exitRecord{Code: 255}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.calls, []string{"delete"}) || f.task || f.labelsOf[wellknown.LabelExitCode] != "1" {
		t.Fatalf("second reap: calls %v, labels %v", f.calls, f.labelsOf)
	}
}

// A failed record keeps the task: the shim still has the exit status.
func TestReapKeepsTaskWhenRecordFails(t *testing.T) {
	f := &fakeReap{labelsOf: ours(), task: true, failSet: errors.New("disk full")}
	err := reap(context.Background(), f, "c1", ours(), exitRecord{Code: 3})
	if err == nil || !f.task || slices.Contains(f.calls, "delete") {
		t.Fatalf("err %v, calls %v, task kept %v", err, f.calls, f.task)
	}
	f.failSet, f.failDel = nil, errors.New("shim busy")
	if err := reap(context.Background(), f, "c1", ours(), exitRecord{Code: 3}); err == nil || !f.task {
		t.Fatalf("failed delete: err %v, task kept %v", err, f.task)
	}
}

// A container removed meanwhile is NotFound; one that is not podhost's is
// left alone.
func TestReapNotOurs(t *testing.T) {
	f := &fakeReap{}
	if err := reap(context.Background(), f, "c1", nil, exitRecord{}); !errdefs.IsNotFound(err) {
		t.Fatalf("removed container: %v", err)
	}
	f = &fakeReap{labelsOf: map[string]string{"other": "x"}, task: true}
	if err := reap(context.Background(), f, "c1", nil, exitRecord{Code: 1}); err != nil || !f.task || len(f.calls) != 1 {
		t.Fatalf("foreign container: err %v, calls %v", err, f.calls)
	}
}

func TestExitLabels(t *testing.T) {
	for _, tt := range []struct {
		name   string
		labels map[string]string
		ex     exitRecord
		want   map[string]string
	}{
		{"first", nil, exitRecord{Code: 0, At: exitedAt},
			map[string]string{wellknown.LabelExitCode: "0", wellknown.LabelFinishedAt: "2026-01-02T03:04:05.000000006Z"}},
		{"no time", nil, exitRecord{Code: 2}, map[string]string{wellknown.LabelExitCode: "2"}},
		{"oom seen", nil, exitRecord{Code: 137, OOM: true},
			map[string]string{wellknown.LabelExitCode: "137", wellknown.LabelOOM: "true"}},
		{"recorded", map[string]string{wellknown.LabelExitCode: "1"}, exitRecord{Code: 255, At: exitedAt}, map[string]string{}},
		{"oom after the exit", map[string]string{wellknown.LabelExitCode: "137"}, exitRecord{Code: 137, OOM: true},
			map[string]string{wellknown.LabelOOM: "true"}},
		{"oom recorded", map[string]string{wellknown.LabelExitCode: "137", wellknown.LabelOOM: "true"},
			exitRecord{Code: 137, OOM: true}, map[string]string{}},
	} {
		if got := exitLabels(tt.labels, tt.ex); !maps.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// What noTaskState reads back from the labels reap wrote is what the
// stopped task said.
func TestExitFromLabels(t *testing.T) {
	r := &Runtime{oom: map[string]bool{}}
	labels := ours()
	maps.Copy(labels, exitLabels(labels, exitRecord{Code: 1, At: exitedAt}))
	labels[wellknown.LabelStartedAt] = exitedAt.Add(-time.Second).Format(time.RFC3339Nano)
	pc := &podstate.Container{ID: "c1", PID: 42}
	if !r.exitFromLabels(pc, labels) {
		t.Fatal("no exit read")
	}
	if pc.State != podstate.StateExited || pc.ExitCode != 1 || pc.Reason != "Error" || pc.PID != 0 ||
		!pc.FinishedAt.Equal(exitedAt) || pc.FinishedAt != exitedAt || !pc.StartedAt.Equal(exitedAt.Add(-time.Second)) {
		t.Fatalf("from labels: %+v", pc)
	}
	r.oom["c1"] = true // the OOM event was seen, its label not written
	if r.exitFromLabels(pc, labels); pc.Reason != "OOMKilled" {
		t.Fatalf("reason %q after an OOM event", pc.Reason)
	}
	if r.exitFromLabels(&podstate.Container{ID: "c2"}, ours()) {
		t.Fatal("exit read from labels without one")
	}
}
