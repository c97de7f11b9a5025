package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/utils/clock"
)

// maxRegisterBackoff caps the wait between registration attempts (the
// kubelet's 7 s).
const maxRegisterBackoff = 7 * time.Second

// register creates the Node, or reconciles an existing one's labels (a
// restart, a re-registration), retrying until it succeeds; false when ctx
// ended first.
func (a *Agent) register(ctx context.Context) bool {
	errs := newErrorLog(a.log)
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, maxRegisterBackoff) {
		err := a.tryRegister(ctx)
		if err == nil {
			return true
		}
		errs.fail("register", "cannot register the node with the API server: retrying", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
	}
}

// tryRegister is the kubelet's tryRegisterWithAPIServer.
func (a *Agent) tryRegister(ctx context.Context) error {
	local, err := a.localNode(ctx)
	if err != nil {
		return fmt.Errorf("register node: %w", err)
	}
	want := initialNode(local, time.Now())
	nodes := a.client.CoreV1().Nodes()
	created, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if err == nil {
		a.setNodeUID(created.UID)
		a.log.Info("registered the node", "uid", created.UID)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("register node: create: %w", err)
	}
	existing, err := nodes.Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("register node: get the existing node: %w", err)
	}
	if missing := missingLabels(existing.Labels, want.Labels); len(missing) > 0 {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": missing}})
		if err != nil {
			return fmt.Errorf("register node: %w", err)
		}
		if existing, err = nodes.Patch(ctx, want.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("register node: update labels: %w", err)
		}
	}
	a.setNodeUID(existing.UID)
	a.log.Info("node was previously registered", "uid", existing.UID)
	return nil
}

// initialNode is the Node to create: podhost's, without what the API
// server sets.
func initialNode(local *corev1.Node, now time.Time) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: local.Name, Labels: maps.Clone(local.Labels)}}
	applyStatus(&n.Status, &local.Status, now)
	return n
}

// missingLabels: the labels of want that have has not, or not with want's
// value (the kubelet's updateDefaultLabels, for every label it sets).
func missingLabels(has, want map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range want {
		if got, ok := has[k]; !ok || got != v {
			out[k] = v
		}
	}
	return out
}

// runLease renews the node's Lease with the kubelet's lease controller
// (the holder is the node, the duration 40 s, the renewal every quarter
// of it; owned by the Node, the kubelet's SetNodeOwnerFunc) while the
// daemon answers. The Lease says the node's agent is alive, and here that
// is the daemon, not this process: while the daemon does not answer
// (Backend.Node, every StatusUpdate) the controller is stopped, the Lease
// expires as a dead kubelet's does, and the cluster marks the Node
// Unknown.
func (a *Agent) runLease(ctx context.Context) {
	t := time.NewTicker(a.opts.StatusUpdate)
	defer t.Stop()
	var stop context.CancelFunc
	done := make(chan struct{})
	for {
		switch err := a.getDaemonErr(); {
		case err == nil && stop == nil:
			var cctx context.Context
			cctx, stop = context.WithCancel(ctx)
			done = make(chan struct{})
			c := lease.NewController(clock.RealClock{}, a.client, a.opts.NodeName, int32(a.opts.LeaseDuration/time.Second),
				nil, a.opts.LeaseDuration/4, a.opts.NodeName, LeaseNamespace, a.setLeaseOwner)
			go func() { defer close(done); c.Run(cctx) }()
		case err != nil && stop != nil:
			stop()
			<-done
			stop = nil
			a.log.Warn("the Lease is no longer renewed until the daemon answers", "err", err)
		}
		select {
		case <-ctx.Done():
			if stop != nil {
				stop()
				<-done
			}
			return
		case <-t.C:
		}
	}
}

// setLeaseOwner makes the Node the lease's owner, once its UID is known.
func (a *Agent) setLeaseOwner(l *coordinationv1.Lease) error {
	if len(l.OwnerReferences) > 0 {
		return nil
	}
	if uid := a.getNodeUID(); uid != "" {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Node", Name: a.opts.NodeName, UID: uid}}
	}
	return nil
}

// nodeStatus is what the status loop remembers between periods.
type nodeStatus struct {
	node       *corev1.Node // the Node as the API server last returned it (nil: get it)
	lastReport time.Time
	errs       *errorLog
}

// runNodeStatus computes the node status every StatusUpdate and sends it
// when it changed, or when it was last sent StatusReport ago (the
// kubelet's updateNodeStatus).
func (a *Agent) runNodeStatus(ctx context.Context) {
	st := &nodeStatus{errs: newErrorLog(a.log)}
	t := time.NewTicker(a.opts.StatusUpdate)
	defer t.Stop()
	for {
		if err := a.updateNodeStatus(ctx, st, time.Now()); err != nil {
			st.node = nil
			st.errs.fail("status", "cannot update the node status: retrying", err)
		} else {
			st.errs.ok("status")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// updateNodeStatus is the kubelet's tryUpdateNodeStatus. A Node deleted
// from the cluster is registered again (the kubelet would need a
// restart).
func (a *Agent) updateNodeStatus(ctx context.Context, st *nodeStatus, now time.Time) error {
	local, err := a.localNode(ctx)
	if err != nil {
		return err
	}
	if st.node == nil {
		n, err := a.client.CoreV1().Nodes().Get(ctx, a.opts.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			a.log.Warn("the node was deleted from the cluster: registering it again")
			st.lastReport = time.Time{}
			return a.tryRegister(ctx)
		}
		if err != nil {
			return fmt.Errorf("get node: %w", err)
		}
		st.node = n
	}
	next := st.node.DeepCopy()
	applyStatus(&next.Status, &local.Status, now)
	if !statusChanged(&st.node.Status, &next.Status) && now.Sub(st.lastReport) < a.opts.StatusReport {
		return nil
	}
	patch, err := nodeStatusPatch(st.node, next)
	if err != nil {
		return err
	}
	updated, err := a.client.CoreV1().Nodes().Patch(ctx, a.opts.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patch node status: %w", err)
	}
	a.setNodeUID(updated.UID)
	st.node, st.lastReport = updated, now
	return nil
}

// applyStatus sets what podhost reports of the node on st: capacity,
// allocatable, addresses, system info and its conditions, heartbeat now;
// a condition keeps its transition time while its status does not
// change (the kubelet's setters). Conditions others set are kept.
func applyStatus(st, local *corev1.NodeStatus, now time.Time) {
	st.Capacity, st.Allocatable = local.Capacity.DeepCopy(), local.Allocatable.DeepCopy()
	st.Addresses = append([]corev1.NodeAddress(nil), local.Addresses...)
	st.DaemonEndpoints = local.DaemonEndpoints
	runtime := st.NodeInfo.ContainerRuntimeVersion
	st.NodeInfo = local.NodeInfo
	if st.NodeInfo.ContainerRuntimeVersion == "" { // containerd did not answer: what it said last
		st.NodeInfo.ContainerRuntimeVersion = runtime
	}
	for _, c := range local.Conditions {
		c.LastHeartbeatTime = metav1.NewTime(now)
		i := conditionIndex(st.Conditions, c.Type)
		if i < 0 {
			st.Conditions = append(st.Conditions, c)
			continue
		}
		switch old := st.Conditions[i]; {
		case old.Status == c.Status:
			c.LastTransitionTime = old.LastTransitionTime
		case !old.LastTransitionTime.IsZero():
			c.LastTransitionTime = metav1.NewTime(now)
		}
		st.Conditions[i] = c
	}
}

func conditionIndex(cs []corev1.NodeCondition, t corev1.NodeConditionType) int {
	for i, c := range cs {
		if c.Type == t {
			return i
		}
	}
	return -1
}

// statusChanged: the statuses differ in more than heartbeat times (the
// kubelet's nodeStatusHasChanged).
func statusChanged(old, next *corev1.NodeStatus) bool {
	strip := func(s *corev1.NodeStatus) *corev1.NodeStatus {
		c := s.DeepCopy()
		for i := range c.Conditions {
			c.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return c
	}
	return !apiequality.Semantic.DeepEqual(strip(old), strip(next))
}

// nodeStatusPatch is the kubelet's preparePatchBytesforNodeStatus: a
// strategic merge patch of the status (spec untouched); the addresses,
// wrongly marked patchStrategy=merge upstream, are replaced as a whole.
func nodeStatusPatch(old, next *corev1.Node) ([]byte, error) {
	oldData, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("node status patch: %w", err)
	}
	diff := next.DeepCopy()
	diff.Spec = old.Spec
	replaceAddresses := len(old.Status.Addresses) > 0 && !apiequality.Semantic.DeepEqual(old.Status.Addresses, next.Status.Addresses)
	if replaceAddresses {
		diff.Status.Addresses = nil
	}
	newData, err := json.Marshal(diff)
	if err != nil {
		return nil, fmt.Errorf("node status patch: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, corev1.Node{})
	if err != nil || !replaceAddresses {
		return patch, err
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, fmt.Errorf("node status patch: %w", err)
	}
	status, _ := m["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		m["status"] = status
	}
	addrs := make([]any, 0, len(next.Status.Addresses)+1)
	for _, a := range next.Status.Addresses {
		addrs = append(addrs, a)
	}
	status["addresses"] = append(addrs, map[string]any{"$patch": "replace"})
	return json.Marshal(m)
}
