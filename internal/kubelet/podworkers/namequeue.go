package podworkers

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// nameQueue serializes workers that share a full name (kubelet's
// startedStaticPodsByFullname / waitingToStartStaticPodsByFullname, applied
// to every pod: all podhost pods are static pods).
//
// Each full name has a queue of unfinished workers in UpdatePod arrival
// order and at most one holder: the worker allowed to act. A worker becomes
// the holder when it first does work (SyncPod, or terminating work for a
// pod killed before it started) and stays the holder until it is finished
// (SyncTerminatedPod done), so a new UID never starts while an older UID with
// the same name may still have containers, a sandbox or host ports.
//
// When the name is free, the next holder is the first queued worker whose
// termination was requested (such a worker may own leftovers from before a
// daemon restart; tearing it down first is always safe), else the first in
// arrival order. Guarded by PodWorkers.mu.
type nameQueue map[string]*nameEntry

type nameEntry struct {
	queue  []types.UID
	holder types.UID // "" = free
}

func (q nameQueue) add(name string, uid types.UID) {
	e := q[name]
	if e == nil {
		e = &nameEntry{}
		q[name] = e
	}
	if !slices.Contains(e.queue, uid) {
		e.queue = append(e.queue, uid)
	}
}

// mayAct reports whether uid may do work now, making it the holder if the
// name is free and uid is next. terminating tells whether a queued UID's
// termination was requested.
//
// An orphan (a runtime-only pod: containers that no worker owns, found by
// housekeeping) never waits behind another UID: it has nothing to start,
// only leftovers to remove, and the holder may be a desired pod that never
// finishes — waiting would leave its containers running for ever. It still
// takes the name when the name is free and it is next, so that nothing new
// starts before it is gone.
func (q nameQueue) mayAct(name string, uid types.UID, terminating func(types.UID) bool, orphan bool) bool {
	e := q[name]
	if e == nil || !slices.Contains(e.queue, uid) {
		return true // not tracked (forgotten worker): nothing to order against
	}
	if e.holder != "" {
		return e.holder == uid || orphan
	}
	next := e.queue[0]
	for _, u := range e.queue {
		if terminating(u) {
			next = u
			break
		}
	}
	if next != uid {
		return orphan
	}
	e.holder = uid
	return true
}

// remove drops uid (finished or forgotten) and returns the UIDs still queued
// under name, which must be woken to re-check mayAct.
func (q nameQueue) remove(name string, uid types.UID) []types.UID {
	e := q[name]
	if e == nil {
		return nil
	}
	e.queue = slices.DeleteFunc(e.queue, func(u types.UID) bool { return u == uid })
	if e.holder == uid {
		e.holder = ""
	}
	if len(e.queue) == 0 {
		delete(q, name)
		return nil
	}
	return slices.Clone(e.queue)
}

// holderOf returns the UID holding name, "" if none.
func (q nameQueue) holderOf(name string) types.UID {
	if e := q[name]; e != nil {
		return e.holder
	}
	return ""
}
