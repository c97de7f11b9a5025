package rolling

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
)

func workload(t *testing.T, kind string, replicas int, image, strategy string) *manifest.Workload {
	t.Helper()
	doc := fmt.Sprintf(`apiVersion: apps/v1
kind: %s
metadata: {name: web}
spec:
  replicas: %d
%s  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: main, image: %q}]
`, kind, replicas, strategy, image)
	objs, err := manifest.DecodeObjects("w.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return objs.Workloads[0]
}

// node is a fake of the pods that run: a pod passed on becomes Ready one
// round later; one taken out is gone one round later.
type node struct {
	ready, running map[types.UID]bool
	unready        map[types.UID]bool // never become Ready
}

func newNode() *node {
	return &node{ready: map[types.UID]bool{}, running: map[types.UID]bool{}, unready: map[types.UID]bool{}}
}

func (n *node) ReadyFor(uid types.UID) (time.Duration, bool) { return time.Hour, n.ready[uid] }
func (n *node) Gone(uid types.UID) bool                      { return !n.running[uid] }

// round runs what st passes on: new pods start (not Ready yet), pods
// started a round ago become Ready, pods no longer passed on stop.
func (n *node) round(st State) {
	passed := map[types.UID]bool{}
	for _, p := range st.Pods {
		passed[p.UID] = true
		if n.running[p.UID] && !n.unready[p.UID] {
			n.ready[p.UID] = true
		}
		n.running[p.UID] = true
	}
	for uid := range n.running {
		if !passed[uid] {
			delete(n.running, uid)
			delete(n.ready, uid)
		}
	}
}

func (n *node) allReady(st State) bool {
	for _, p := range st.Pods {
		if !n.ready[p.UID] && !n.unready[p.UID] {
			return false
		}
	}
	return true
}

func uidSet(st State) []types.UID {
	var out []types.UID
	for _, p := range st.Pods {
		out = append(out, p.UID)
	}
	slices.Sort(out)
	return out
}

// podNames are the names passed on, for messages.
func podNames(st State) []string {
	var out []string
	for _, p := range st.Pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// settle runs rounds of Plan until it passes on exactly w's pods, calling
// check after each; it fails after 50 rounds.
func settle(t *testing.T, w *manifest.Workload, st State, n *node, check func(State)) State {
	t.Helper()
	for range 50 {
		st = Plan(w, st, n)
		check(st)
		n.round(st)
		if slices.Equal(uidSet(st), uidSet(State{Pods: w.Pods})) && len(st.Leaving) == 0 && n.allReady(st) {
			return st
		}
	}
	t.Fatalf("not settled: %v", podNames(st))
	return st
}

// A Deployment's default strategy (25%/25%: surge 1, unavailable 0 for 3
// replicas) adds one new pod, waits for it to be Ready, takes one old pod
// out, and so on: never more than 4 pods, never fewer than 3 Ready.
func TestPlanDeploymentRollsOneAtATime(t *testing.T) {
	n := newNode()
	v1 := workload(t, "Deployment", 3, "img:1", "")
	st := settle(t, v1, State{}, n, func(State) {})
	if len(n.ready) != 3 {
		t.Fatalf("v1 not Ready: %v", n.ready)
	}
	v2 := workload(t, "Deployment", 3, "img:2", "")
	maxNew := 0
	settle(t, v2, st, n, func(st State) {
		ready := 0
		newIn := 0
		for _, p := range st.Pods {
			if n.ready[p.UID] {
				ready++
			}
			if strings.HasPrefix(p.Name, v2.Pods[0].Name[:len(v2.Pods[0].Name)-5]) {
				newIn++
			}
		}
		if len(st.Pods) > 4 || ready < 3 {
			t.Errorf("passed %v: %d pods, %d Ready; want at most 4, at least 3 Ready", podNames(st), len(st.Pods), ready)
		}
		if newIn > maxNew+1 {
			t.Errorf("%d new pods at once after %d", newIn, maxNew)
		}
		maxNew = max(maxNew, newIn)
	})
}

// A new pod that never becomes Ready stalls the rollout: the old pods
// keep running (as a Deployment past its progress deadline).
func TestPlanStallsOnUnreadyPod(t *testing.T) {
	n := newNode()
	st := settle(t, workload(t, "Deployment", 3, "img:1", ""), State{}, n, func(State) {})
	v2 := workload(t, "Deployment", 3, "img:2", "")
	for _, p := range v2.Pods {
		n.unready[p.UID] = true
	}
	for range 10 {
		st = Plan(v2, st, n)
		n.round(st)
	}
	if len(st.Pods) != 4 || len(n.ready) != 3 {
		t.Fatalf("stalled rollout passes %v with %d Ready; want the 3 old pods and 1 new", podNames(st), len(n.ready))
	}
}

// A StatefulSet replaces its pods highest ordinal first, one at a time,
// the old pod out before the new one of the same name comes in.
func TestPlanStatefulSetReverseOrdinals(t *testing.T) {
	n := newNode()
	st := settle(t, workload(t, "StatefulSet", 3, "img:1", ""), State{}, n, func(State) {})
	v2 := workload(t, "StatefulSet", 3, "img:2", "")
	newUID := map[types.UID]string{}
	for _, p := range v2.Pods {
		newUID[p.UID] = p.Name
	}
	var order []string
	settle(t, v2, st, n, func(st State) {
		names := map[string]int{}
		for _, p := range st.Pods {
			names[p.Name]++
			if name, ok := newUID[p.UID]; ok && !slices.Contains(order, name) {
				order = append(order, name)
			}
		}
		for name, c := range names {
			if c > 1 {
				t.Errorf("%s passed on twice (old and new at once)", name)
			}
		}
	})
	if got := strings.Join(order, ","); got != "web-2,web-1,web-0" {
		t.Errorf("replaced in order %s, want web-2,web-1,web-0", got)
	}
}

// Recreate: every old pod out, the new ones only once they are gone.
func TestPlanRecreate(t *testing.T) {
	n := newNode()
	strategy := "  strategy: {type: Recreate}\n"
	st := settle(t, workload(t, "Deployment", 2, "img:1", strategy), State{}, n, func(State) {})
	old := st.Pods
	v2 := workload(t, "Deployment", 2, "img:2", strategy)
	st = Plan(v2, st, n)
	if len(st.Pods) != 0 || len(st.Leaving) != 2 {
		t.Fatalf("first step passes %v, leaving %v; want nothing, 2 leaving", podNames(st), st.Leaving)
	}
	if again := Plan(v2, st, n); len(again.Pods) != 0 {
		t.Fatalf("new pods passed on while old ones run: %v", podNames(again))
	}
	n.round(st) // the old pods stop
	for _, p := range old {
		if !n.Gone(p.UID) {
			t.Fatal("old pod still running")
		}
	}
	if st = Plan(v2, st, n); len(st.Pods) != 2 {
		t.Fatalf("after the old pods are gone: %v", podNames(st))
	}
}

// Scaling, a first sight and a ReplicaSet change take effect at once.
func TestPlanAtOnce(t *testing.T) {
	n := newNode()
	v1 := workload(t, "Deployment", 3, "img:1", "")
	st := settle(t, v1, State{}, n, func(State) {})
	if got := Plan(workload(t, "Deployment", 1, "img:1", ""), st, n); len(got.Pods) != 1 {
		t.Errorf("scaled to 1: %v", podNames(got))
	}
	if got := Plan(workload(t, "Deployment", 3, "img:2", ""), State{}, n); len(got.Pods) != 3 {
		t.Errorf("first sight: %v", podNames(got))
	}
	rs1 := workload(t, "ReplicaSet", 2, "img:1", "")
	if got := Plan(workload(t, "ReplicaSet", 2, "img:2", ""), State{Pods: rs1.Pods}, n); len(got.Pods) != 2 || got.Pods[0].UID == rs1.Pods[0].UID {
		t.Errorf("ReplicaSet edit: %v", podNames(got))
	}
}

// readyFor fakes Pods: every pod Ready for d.
type readyFor time.Duration

func (r readyFor) ReadyFor(types.UID) (time.Duration, bool) { return time.Duration(r), true }
func (r readyFor) Gone(types.UID) bool                      { return false }

// minReadySeconds: a pod counts as available once Ready that long, so no
// old pod goes before the new one has been Ready for 30 s.
func TestPlanMinReadySeconds(t *testing.T) {
	strategy := "  minReadySeconds: 30\n"
	v1 := workload(t, "Deployment", 3, "img:1", strategy)
	v2 := workload(t, "Deployment", 3, "img:2", strategy)
	st := Plan(v2, State{Pods: v1.Pods}, readyFor(0))
	if len(st.Pods) != 4 {
		t.Fatalf("first step: %v, want 3 old and 1 new", podNames(st))
	}
	if again := Plan(v2, st, readyFor(10*time.Second)); len(again.Pods) != 4 || again.Pods[1].UID == v2.Pods[1].UID {
		t.Errorf("Ready 10 s of 30: %v, want no change", podNames(again))
	}
	if next := Plan(v2, st, readyFor(40*time.Second)); next.Pods[1].UID != v2.Pods[1].UID {
		t.Errorf("Ready 40 s: %v, want the second new pod in", podNames(next))
	}
}
