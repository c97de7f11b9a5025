package podworkers

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/podstate"
)

// OnFinished is called once per worker that finished (a desired pod's
// SyncTerminatedPod, a runtime-only pod's SyncTerminatingRuntimePod), and
// not for a worker that Shutdown stops.
func TestOnFinished(t *testing.T) {
	finished := make(chan types.UID, 10)
	e := newEnv(t, func(o *Options) { o.OnFinished = func(uid types.UID) { finished <- uid } })
	e.h.hook("sync", func(c call) (bool, error) { return c.uid == "a", nil }) // a is terminal: tears itself down
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: newPod("a", "job", 1)})
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, RunningPod: &podstate.Pod{UID: "orphan", Name: "x", Namespace: "default"}})
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: newPod("c", "web", 1)}) // runs until Shutdown
	got := map[types.UID]int{}
	for range 2 {
		select {
		case uid := <-finished:
			got[uid]++
		case <-time.After(waitTimeout):
			t.Fatalf("OnFinished calls %v, want a and orphan", got)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := e.pw.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	close(finished)
	for uid := range finished {
		got[uid]++
	}
	if len(got) != 2 || got["a"] != 1 || got["orphan"] != 1 {
		t.Fatalf("OnFinished calls %v, want a and orphan once each", got)
	}
}
