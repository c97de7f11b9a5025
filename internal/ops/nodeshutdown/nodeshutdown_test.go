package nodeshutdown

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/model/wellknown"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pod(name string, grace int64, class string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
	if grace >= 0 {
		p.Spec.TerminationGracePeriodSeconds = &grace
	}
	p.Spec.PriorityClassName = class
	return p
}

func TestPlan(t *testing.T) {
	prio := int32(SystemCriticalPriority)
	byPrio := pod("by-priority", 5, "")
	byPrio.Spec.Priority = &prio
	pods := []*corev1.Pod{
		pod("web", 30, ""), pod("fast", 3, ""), pod("default-grace", -1, "high"),
		pod("node-agent", 60, "system-node-critical"), pod("dns", 2, "system-cluster-critical"), byPrio,
	}
	tests := []struct {
		name            string
		grace, critical time.Duration
		want            [2]map[string]int64 // regular, critical: pod → grace
		budgets         [2]time.Duration
	}{
		{
			name: "30s with 10s for critical pods", grace: 30 * time.Second, critical: 10 * time.Second,
			want: [2]map[string]int64{
				{"web": 20, "fast": 3, "default-grace": 20},
				{"node-agent": 10, "dns": 2, "by-priority": 5},
			},
			budgets: [2]time.Duration{20 * time.Second, 10 * time.Second},
		},
		{
			name: "no critical budget: critical pods get the minimum", grace: 45 * time.Second,
			want: [2]map[string]int64{
				{"web": 30, "fast": 3, "default-grace": 30},
				{"node-agent": 1, "dns": 1, "by-priority": 1},
			},
			budgets: [2]time.Duration{45 * time.Second, 0},
		},
		{
			name: "critical budget larger than the period is capped", grace: 10 * time.Second, critical: 20 * time.Second,
			want: [2]map[string]int64{
				{"web": 1, "fast": 1, "default-grace": 1},
				{"node-agent": 10, "dns": 2, "by-priority": 5},
			},
			budgets: [2]time.Duration{0, 10 * time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			groups := Plan(pods, tt.grace, tt.critical)
			if len(groups) != 2 || groups[0].Critical || !groups[1].Critical {
				t.Fatalf("groups: want regular then critical, got %+v", groups)
			}
			for i, g := range groups {
				if g.Budget != tt.budgets[i] {
					t.Errorf("group %d budget = %v, want %v", i, g.Budget, tt.budgets[i])
				}
				got := map[string]int64{}
				for _, p := range g.Pods {
					got[p.Pod.Name] = p.GracePeriod
				}
				if len(got) != len(tt.want[i]) {
					t.Errorf("group %d = %v, want %v", i, got, tt.want[i])
				}
				for n, w := range tt.want[i] {
					if got[n] != w {
						t.Errorf("group %d pod %s grace = %d, want %d", i, n, got[n], w)
					}
				}
			}
		})
	}
}

// fakePods records kills; a kill "terminates" when its release channel is
// closed, or never (block) until ctx ends.
type fakePods struct {
	pods  []*corev1.Pod
	block map[string]bool

	mu     sync.Mutex
	kills  []string
	graces map[string]int64
}

func (f *fakePods) ActivePods() []*corev1.Pod { return f.pods }

func (f *fakePods) KillPod(ctx context.Context, p *corev1.Pod, grace int64) error {
	f.mu.Lock()
	f.kills = append(f.kills, p.Name)
	f.graces[p.Name] = grace
	f.mu.Unlock()
	if f.block[p.Name] {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

type fakeRecorder struct {
	mu     sync.Mutex
	marked []string
}

func (r *fakeRecorder) MarkNodeShutdown(p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.marked = append(r.marked, p.Name)
}

func TestShutdownKillsRegularBeforeCritical(t *testing.T) {
	fp := &fakePods{graces: map[string]int64{}, pods: []*corev1.Pod{
		pod("crit", 30, "system-node-critical"), pod("a", 30, ""), pod("b", 2, ""),
	}}
	rec := &fakeRecorder{}
	m := New(Config{GracePeriod: 20 * time.Second, CriticalGracePeriod: 5 * time.Second}, nil, fp, rec)
	m.Shutdown(context.Background())
	if len(fp.kills) != 3 || fp.kills[2] != "crit" {
		t.Fatalf("kill order = %v, want the critical pod last", fp.kills)
	}
	want := map[string]int64{"a": 15, "b": 2, "crit": 5}
	for n, g := range want {
		if fp.graces[n] != g {
			t.Errorf("%s grace = %d, want %d", n, fp.graces[n], g)
		}
	}
	if len(rec.marked) != 3 {
		t.Errorf("marked as terminated by shutdown: %v, want all three", rec.marked)
	}
}

// A regular pod that does not terminate holds the critical pods back only
// for the regular group's budget.
func TestShutdownGroupBudgetBoundsTheWait(t *testing.T) {
	fp := &fakePods{graces: map[string]int64{}, block: map[string]bool{"stuck": true}, pods: []*corev1.Pod{
		pod("stuck", 30, ""), pod("crit", 30, "system-cluster-critical"),
	}}
	m := New(Config{GracePeriod: 1100 * time.Millisecond, CriticalGracePeriod: time.Second}, nil, fp, &fakeRecorder{})
	start := time.Now()
	m.Shutdown(context.Background())
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("shutdown took %v; the regular group's budget is 100ms", took)
	}
	if len(fp.kills) != 2 || fp.kills[1] != "crit" {
		t.Fatalf("kills = %v, want the critical pod killed after the stuck one's budget", fp.kills)
	}
}

type fakeLogind struct {
	delay    time.Duration
	setTo    time.Duration
	events   chan bool
	mu       sync.Mutex
	held     int // inhibitors held
	taken    int
	inhibErr error
}

func (l *fakeLogind) InhibitDelayMax() (time.Duration, error) { return l.delay, nil }
func (l *fakeLogind) SetInhibitDelayMax(d time.Duration) error {
	l.setTo, l.delay = d, d
	return nil
}
func (l *fakeLogind) Inhibit() (func() error, error) {
	if l.inhibErr != nil {
		return nil, l.inhibErr
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held++
	l.taken++
	return func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.held--
		return nil
	}, nil
}
func (l *fakeLogind) WatchShutdown(context.Context) (<-chan bool, error) { return l.events, nil }
func (l *fakeLogind) state() (held, taken int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held, l.taken
}

// TestRunInhibitorLifecycle: the delay is raised to the grace period, the
// inhibitor is held until PrepareForShutdown(true), released after the
// pods were killed, and taken again when the shutdown is cancelled.
func TestRunInhibitorLifecycle(t *testing.T) {
	l := &fakeLogind{delay: 5 * time.Second, events: make(chan bool)}
	fp := &fakePods{graces: map[string]int64{}, pods: []*corev1.Pod{pod("a", 30, "")}}
	m := New(Config{GracePeriod: 30 * time.Second}, l, fp, &fakeRecorder{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	l.events <- false // unbuffered: Run is in its loop, inhibitor held
	if held, _ := l.state(); held != 1 {
		t.Fatalf("inhibitors held while running = %d, want 1", held)
	}
	if l.setTo != 30*time.Second {
		t.Errorf("InhibitDelayMax raised to %v, want 30s", l.setTo)
	}
	l.events <- true
	l.events <- false // handled after the shutdown: cancelled, take it again
	l.events <- false // a second cancel does not take another one
	held, taken := l.state()
	if held != 1 || taken != 2 {
		t.Errorf("after shutdown + cancel: held %d taken %d, want 1 and 2", held, taken)
	}
	fp.mu.Lock()
	kills := len(fp.kills)
	fp.mu.Unlock()
	if kills != 1 {
		t.Errorf("pods killed = %d, want 1", kills)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if held, _ := l.state(); held != 0 {
		t.Errorf("inhibitor still held after Run returned")
	}
}

func TestRunWithoutLogindOrDisabled(t *testing.T) {
	fp := &fakePods{graces: map[string]int64{}}
	if err := New(Config{GracePeriod: 30 * time.Second}, nil, fp, &fakeRecorder{}).Run(context.Background()); err != nil {
		t.Fatalf("without logind: %v", err)
	}
	l := &fakeLogind{inhibErr: errors.New("access denied"), events: make(chan bool)}
	if err := New(Config{GracePeriod: 30 * time.Second}, l, fp, &fakeRecorder{}).Run(context.Background()); err != nil {
		t.Fatalf("inhibit failing: %v", err)
	}
	l2 := &fakeLogind{events: make(chan bool)}
	if err := New(Config{}, l2, fp, &fakeRecorder{}).Run(context.Background()); err != nil {
		t.Fatalf("disabled: %v", err)
	}
	if _, taken := l2.state(); taken != 0 {
		t.Fatal("shutdownGracePeriod 0 took an inhibitor")
	}
}

// Within a group, podhost.io/after dependants stop before what they depend
// on (each level waited for before the next).
func TestShutdownStopsDependantsFirst(t *testing.T) {
	db, cache, app := pod("db", 30, ""), pod("cache", 30, ""), pod("app", 30, "")
	app.Annotations = map[string]string{wellknown.AnnotationAfter: "db,cache"}
	cache.Annotations = map[string]string{wellknown.AnnotationAfter: "db"}
	fp := &fakePods{graces: map[string]int64{}, pods: []*corev1.Pod{db, cache, app}}
	m := New(Config{GracePeriod: 20 * time.Second}, nil, fp, &fakeRecorder{})
	m.Shutdown(context.Background())
	if want := []string{"app", "cache", "db"}; !slices.Equal(fp.kills, want) {
		t.Fatalf("kill order = %v, want %v", fp.kills, want)
	}
}
