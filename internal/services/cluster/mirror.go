package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// The kubelet's annotations (pkg/kubelet/types).
const (
	// AnnotationMirror marks a mirror pod; its value is the static pod's
	// config hash.
	AnnotationMirror = corev1.MirrorPodAnnotationKey
	// AnnotationConfigHash, AnnotationConfigSource: the static pod's hash
	// and source (file, http), as the kubelet annotates its static pods.
	AnnotationConfigHash   = "kubernetes.io/config.hash"
	AnnotationConfigSource = "kubernetes.io/config.source"
)

var everything = labels.Everything()

// mirrors reconciles the mirror pods against the node's pods.
type mirrors struct {
	a      *Agent
	lister listerscorev1.PodLister
	errs   *errorLog
	tokens *tokenCache // the service account tokens of the pods from the API server
	pass   svcPass     // the Services read in this syncAPIPods
}

func newMirrors(a *Agent, lister listerscorev1.PodLister) *mirrors {
	return &mirrors{a: a, lister: lister, errs: newErrorLog(a.log), tokens: newTokenCache(clientTokens{a})}
}

// runMirrors watches the pods bound to this node (a field selector on
// spec.nodeName, as the kubelet's API-server source) and reconciles the
// mirror pods on every change of a pod here or there, and every
// MirrorResync.
func (a *Agent) runMirrors(ctx context.Context) {
	// One informer of pods, not client-go's informer factory: the factory
	// links an informer and a lister of every API group into podhost.
	lw := cache.NewFilteredListWatchFromClient(a.client.CoreV1().RESTClient(), "pods", metav1.NamespaceAll, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", a.opts.NodeName).String()
	})
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	kick := make(chan struct{}, 1)
	notify := func(any) {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: notify,
		UpdateFunc: func(_, n any) { notify(n) }, DeleteFunc: notify}); err != nil {
		a.log.Error("mirror pods: cannot watch the node's pods", "err", err)
		return
	}
	m := newMirrors(a, listerscorev1.NewPodLister(inf.GetIndexer()))
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return
	}
	a.setPodLister(m.lister)
	t := time.NewTicker(a.opts.MirrorResync)
	defer t.Stop()
	// A new Changed only when the last one fired: each one waits in a
	// goroutine until the next change.
	changed := a.b.Changed(ctx)
	for {
		m.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-changed:
			changed = a.b.Changed(ctx)
		case <-kick:
		case <-t.C:
		}
	}
}

// reconcile is the kubelet's mirror pod handling of syncPod (create a
// missing mirror pod; delete and recreate one that is outdated or being
// deleted) and of HandlePodCleanups (delete the mirror pods of pods that
// are gone), with the status manager's status patches.
func (m *mirrors) reconcile(ctx context.Context) {
	inCluster, err := m.lister.List(everything)
	if err != nil {
		return
	}
	byName := make(map[string]*corev1.Pod, len(inCluster))
	for _, p := range inCluster {
		byName[p.Namespace+"/"+p.Name] = p
	}
	ready := m.a.b.SourcesReady(ctx) // before Pods: then they are all listed
	local, err := m.a.b.Pods(ctx)
	if err != nil {
		m.errs.fail("daemon", "mirror pods: cannot list the node's pods: retrying", err)
		return
	}
	m.errs.ok("daemon")
	seen := make(map[string]bool, len(local))
	apiLocal := map[string]*corev1.Pod{}
	for _, p := range local {
		key := p.Namespace + "/" + p.Name
		if m.a.fromClusterDir(p) {
			apiLocal[key] = p
			continue
		}
		seen[key] = true
		m.sync(ctx, key, p, byName[key])
	}
	if m.a.opts.ClusterDir != "" {
		m.syncAPIPods(ctx, byName, apiLocal)
	}
	if !ready {
		return // a pod not read yet is not gone
	}
	for key, p := range byName {
		if _, ok := p.Annotations[AnnotationMirror]; ok && !seen[key] {
			m.delete(ctx, key, p, "its pod is gone")
		}
	}
}

// syncAPIPods runs syncAPIPod for every pod the cluster binds to this
// node that is not a mirror pod, and removes the files of the others.
func (m *mirrors) syncAPIPods(ctx context.Context, inCluster, local map[string]*corev1.Pod) {
	want := map[string]bool{}
	running := map[types.UID]bool{} // whose tokens are kept
	defer m.tokens.prune(running)
	m.pass = svcPass{}
	defer func() { m.pass = nil }()
	var refused map[string]string // asked once, if a pod does not run
	for key, p := range inCluster {
		if _, mirror := p.Annotations[AnnotationMirror]; mirror {
			continue
		}
		if err := fileSafeName(p); err != nil { // the API server is not trusted with the host's paths
			m.errs.fail(key, "pod from the API server: not handed to the daemon", err, "pod", key)
			continue
		}
		want[m.a.podFile(p.Namespace, p.Name)] = true // a deleted one's file: syncAPIPod's to remove
		if p.DeletionTimestamp == nil {
			running[p.UID] = true
		}
		if refused == nil && local[key] == nil {
			refused, _ = m.a.b.Refusals(ctx) // an error: nothing known refused
		}
		m.syncAPIPod(ctx, key, p, local[key], refused)
	}
	m.removeStaleFiles(want)
}

// sync makes p's mirror pod current: mirror is the API server's pod of
// the same name (nil: none).
func (m *mirrors) sync(ctx context.Context, key string, p, mirror *corev1.Pod) {
	hash := p.Annotations[wellknown.AnnotationConfigHash]
	if mirror != nil {
		if _, ok := mirror.Annotations[AnnotationMirror]; !ok {
			m.errs.fail(key, "mirror pod: a pod of the same name bound to this node is not a mirror pod; not replacing it",
				fmt.Errorf("pod %s exists in the cluster", key), "pod", key)
			return
		}
		if mirror.DeletionTimestamp != nil || mirror.Annotations[AnnotationMirror] != hash {
			if !m.delete(ctx, key, mirror, "outdated or being deleted") {
				return
			}
			mirror = nil
		}
	}
	if mirror == nil {
		if p.DeletionTimestamp != nil {
			return // the kubelet does not mirror a pod that is stopping
		}
		created, err := m.create(ctx, p, hash)
		if err != nil {
			m.errs.fail(key, "cannot create the mirror pod: retrying", err, "pod", key)
			return
		}
		mirror = created
	}
	if err := m.patchStatus(ctx, mirror, p.Status); err != nil {
		m.errs.fail(key, "cannot update the mirror pod's status: retrying", err, "pod", key)
		return
	}
	m.errs.ok(key)
}

// create is the kubelet's CreateMirrorPod: p's metadata and spec, the
// mirror annotation, owned by the Node.
func (m *mirrors) create(ctx context.Context, p *corev1.Pod, hash string) (*corev1.Pod, error) {
	uid := m.a.getNodeUID()
	if uid == "" {
		return nil, fmt.Errorf("node UID unknown")
	}
	mp := mirrorPod(p, m.a.opts.NodeName, uid, hash)
	pods := m.a.client.CoreV1().Pods(mp.Namespace)
	created, err := pods.Create(ctx, mp, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Created by an earlier pass the informer has not shown yet: the
		// same mirror pod is fine (the kubelet's CreateMirrorPod).
		existing, gerr := pods.Get(ctx, mp.Name, metav1.GetOptions{})
		if gerr == nil && existing.DeletionTimestamp == nil && existing.Annotations[AnnotationMirror] == hash {
			return existing, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("create mirror pod: %w", err)
	}
	m.a.log.Info("created the mirror pod", "pod", p.Namespace+"/"+p.Name, "uid", created.UID)
	return created, nil
}

// mirrorPod is the mirror pod of p.
func mirrorPod(p *corev1.Pod, node string, nodeUID types.UID, hash string) *corev1.Pod {
	controller := true
	mp := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace,
		Labels: maps.Clone(p.Labels), Annotations: maps.Clone(p.Annotations),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: nodeUID, Controller: &controller}},
	}, Spec: *p.Spec.DeepCopy()}
	if mp.Annotations == nil {
		mp.Annotations = map[string]string{}
	}
	mp.Annotations[AnnotationMirror] = hash
	mp.Annotations[AnnotationConfigHash] = hash
	mp.Annotations[AnnotationConfigSource] = configSource(p.Annotations[wellknown.AnnotationConfigSource])
	mp.Spec.NodeName = node
	return mp
}

// configSource is the kubelet's source name of a pod from podhost's
// source annotation: http for the manifest URL or artifact (the kubelet
// has no name for an OCI source; it is polled as the URL is), else file.
func configSource(src string) string {
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") || strings.HasPrefix(src, "oci://") {
		return "http"
	}
	return "file"
}

// delete is the kubelet's DeleteMirrorPod: grace 0, only that pod (UID
// precondition). True when it is gone.
func (m *mirrors) delete(ctx context.Context, key string, mirror *corev1.Pod, why string) bool {
	zero := int64(0)
	err := m.a.client.CoreV1().Pods(mirror.Namespace).Delete(ctx, mirror.Name,
		metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &mirror.UID}})
	switch {
	case err == nil:
		m.a.log.Info("deleted the mirror pod", "pod", key, "uid", mirror.UID, "why", why)
	case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err): // gone already, or another pod now
		m.errs.fail(key, "cannot delete the mirror pod: retrying", err, "pod", key)
		return false
	}
	return true
}

// patchStatus is the status manager's PatchPodStatus for a mirror pod:
// a strategic merge patch from the mirror's status to st, the mirror's
// UID as precondition; conditions others set on the mirror pod are kept
// (mergePodStatus). Nothing is sent when nothing changed.
func (m *mirrors) patchStatus(ctx context.Context, mirror *corev1.Pod, st corev1.PodStatus) error {
	next := st.DeepCopy()
	for _, c := range mirror.Status.Conditions {
		if !hasCondition(next.Conditions, c.Type) {
			next.Conditions = append(next.Conditions, c)
		}
	}
	patch, unchanged, err := podStatusPatch(mirror.UID, mirror.Status, *next)
	if err != nil || unchanged {
		return err
	}
	_, err = m.a.client.CoreV1().Pods(mirror.Namespace).Patch(ctx, mirror.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patch mirror pod status: %w", err)
	}
	return nil
}

func hasCondition(cs []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range cs {
		if c.Type == t {
			return true
		}
	}
	return false
}

// podStatusPatch is pkg/util/pod's preparePatchBytesForPodStatus.
func podStatusPatch(uid types.UID, old, next corev1.PodStatus) ([]byte, bool, error) {
	oldData, err := json.Marshal(corev1.Pod{Status: old})
	if err != nil {
		return nil, false, fmt.Errorf("pod status patch: %w", err)
	}
	newData, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: next})
	if err != nil {
		return nil, false, fmt.Errorf("pod status patch: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, corev1.Pod{})
	if err != nil {
		return nil, false, fmt.Errorf("pod status patch: %w", err)
	}
	return patch, string(patch) == fmt.Sprintf(`{"metadata":{"uid":%q}}`, uid), nil
}
