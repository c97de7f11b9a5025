package kubeapi

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// settleTimeout bounds how long a write waits for the daemon to show it.
const settleTimeout = 5 * time.Second

// put writes doc through the store and, when a file was written, waits
// until the daemon shows the object changed from before (nil or without a
// resourceVersion: a new object). A client reading right after its write
// then reads it, as from the API server (`kubectl apply -f pod.yaml &&
// kubectl wait pod/x` must not find the pod missing). The answer is the
// object as the daemon shows it (uid, resourceVersion,
// creationTimestamp); as decoded when the daemon does not show it within
// settleTimeout — the file is written, and the daemon may have refused it
// (get's warnings say why).
func (s *Server) put(ctx context.Context, ri *requestInfo, doc []byte, create, dryRun bool, before runtime.Object) (runtime.Object, error) {
	obj, written, err := s.store.Put(ctx, ri.groupResource(), ri.namespace, ri.name, doc, create, dryRun)
	if err != nil || !written || dryRun {
		return obj, err
	}
	was := resourceVersion(before)
	if shown, ok := s.settle(ctx, ri, func(o runtime.Object) bool { return o != nil && resourceVersion(o) != was }); ok {
		return shown, nil
	}
	return obj, nil
}

// settle waits until done holds for the object ri names as the daemon
// shows it (nil: not shown), at most settleTimeout; it returns that object
// and whether done held.
func (s *Server) settle(ctx context.Context, ri *requestInfo, done func(runtime.Object) bool) (runtime.Object, bool) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for {
		changed := s.b.Changed(ctx) // before the read: no change is missed
		o, _, err := s.find(ri)
		if err != nil {
			o = nil
		}
		if done(o) {
			return o, true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return o, false
		}
	}
}

func resourceVersion(o runtime.Object) string {
	if o == nil {
		return ""
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// deletionStarted: the object is terminating (a pod until its containers
// are gone).
func deletionStarted(o runtime.Object) bool {
	m, err := meta.Accessor(o)
	return err == nil && m.GetDeletionTimestamp() != nil
}
