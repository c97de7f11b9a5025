package eviction

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Observation is what a signal measured: available and capacity, in bytes
// (inodes for the inodesFree signals).
type Observation struct {
	Available, Capacity int64
}

// Observations are one measurement of the node's signals; a signal that
// could not be measured is absent (its thresholds are not met).
type Observations map[Signal]Observation

// Evaluator keeps what the kubelet's eviction manager remembers between two
// looks: when each soft threshold was first seen met, and when each node
// condition was last seen. It is not safe for concurrent use.
type Evaluator struct {
	Thresholds []Threshold
	// PressureTransitionPeriod: a condition stays True this long after its
	// signal was last met (the kubelet's evictionPressureTransitionPeriod).
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriod caps the grace period of a pod evicted for a soft
	// threshold (evictionMaxPodGracePeriod, seconds).
	MaxPodGracePeriod int64

	firstObserved map[Signal]time.Time
	lastObserved  map[corev1.NodeConditionType]time.Time
}

// Pressure is the outcome of one look at the signals.
type Pressure struct {
	// Conditions: the node conditions that are True (MemoryPressure,
	// DiskPressure), transition period included.
	Conditions map[corev1.NodeConditionType]bool
	// Act: the thresholds met whose grace period has passed, the one to
	// reclaim first at index 0 (memory before disk, as the kubelet).
	Act []Threshold
	obs Observations
}

// Observe records one measurement at now and says what it calls for.
func (e *Evaluator) Observe(now time.Time, obs Observations) Pressure {
	if e.firstObserved == nil {
		e.firstObserved = map[Signal]time.Time{}
		e.lastObserved = map[corev1.NodeConditionType]time.Time{}
	}
	met := map[Signal]bool{}
	var act []Threshold
	for _, t := range e.Thresholds {
		o, ok := obs[t.Signal]
		if !ok || o.Available >= t.value(o.Capacity) {
			continue
		}
		e.lastObserved[signalCondition[t.Signal]] = now
		key := t.Signal
		if !t.Hard {
			key = "soft:" + key
		}
		met[key] = true
		first, seen := e.firstObserved[key]
		if !seen {
			first = now
			e.firstObserved[key] = now
		}
		if now.Sub(first) >= t.GracePeriod {
			act = append(act, t)
		}
	}
	for s := range e.firstObserved {
		if !met[s] {
			delete(e.firstObserved, s)
		}
	}
	sort.SliceStable(act, func(i, j int) bool {
		return signalResource[act[i].Signal] == corev1.ResourceMemory && signalResource[act[j].Signal] != corev1.ResourceMemory
	})
	p := Pressure{Conditions: map[corev1.NodeConditionType]bool{}, Act: act, obs: obs}
	for c, last := range e.lastObserved {
		if now.Sub(last) < e.PressureTransitionPeriod || last.Equal(now) {
			p.Conditions[c] = true
		}
	}
	return p
}

// graceFor is the grace period of a pod evicted for t: 1 s for a hard
// threshold (the kubelet's immediateEvictionGracePeriodSeconds), else
// evictionMaxPodGracePeriod capped at the pod's own.
func (e *Evaluator) graceFor(t Threshold, pod *corev1.Pod) int64 {
	if t.Hard {
		return 1
	}
	g := e.MaxPodGracePeriod
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		g = min(g, *pod.Spec.TerminationGracePeriodSeconds)
	}
	return max(g, 1)
}
