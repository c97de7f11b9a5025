package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// The API-server source (the kubelet's third pod source): the pods the
// cluster binds to this node are written, with the ConfigMaps and Secrets
// they reference, as one file each into Options.ClusterDir, which the
// daemon reads as a manifest source of its own (podSecurity.cluster). The
// files are the pods' only way in: the daemon keeps running them while
// this process or the API server is away, and after its own restarts.

// fromClusterDir: the local pod came from the cluster source.
func (a *Agent) fromClusterDir(p *corev1.Pod) bool {
	return a.opts.ClusterDir != "" && filepath.Dir(p.Annotations[wellknown.AnnotationConfigSource]) == a.opts.ClusterDir
}

// fileSafeName refuses a pod whose namespace or name is not what the API
// server itself allows (a DNS label, a DNS subdomain): they make its file's
// name, and a hostile or broken API server must not reach a path outside
// ClusterDir ("../../etc/podhost/config").
func fileSafeName(p *corev1.Pod) error {
	if err := manifest.ValidateNamespace(p.Namespace); err != nil {
		return err
	}
	return manifest.ValidatePodName(p.Name)
}

// podFile is the file of the cluster's pod namespace/name (both checked
// by fileSafeName).
func (a *Agent) podFile(namespace, name string) string {
	return filepath.Join(a.opts.ClusterDir, namespace+"_"+name+".yaml")
}

// syncAPIPod hands the cluster's pod p to the daemon or takes it back:
// local is the daemon's pod of the same name (nil: none). While p is not
// being deleted its file is kept current and its status patched from
// local's. Once p has a deletionTimestamp, the daemon is given p's
// deletion grace period and the file removed (the daemon stops the pod as
// the kubelet does: preStop, SIGTERM, SIGKILL after the grace); once the
// daemon's pod is gone, p is deleted for good (grace 0, UID precondition:
// the kubelet's status manager's last delete). A pod the daemon refused
// (refused: the daemon's refused files) is Failed in the API with the
// daemon's reason, as the kubelet rejects a pod it cannot admit.
func (m *mirrors) syncAPIPod(ctx context.Context, key string, p, local *corev1.Pod, refused map[string]string) {
	a := m.a
	file := a.podFile(p.Namespace, p.Name)
	if local != nil && local.UID != p.UID {
		local = nil // another pod of that name: not this one's
	}
	if p.DeletionTimestamp != nil {
		if err := m.stopAPIPod(ctx, p, local, file); err != nil {
			m.errs.fail(key, "pod from the API server: cannot stop it: retrying", err, "pod", key)
			return
		}
		m.errs.ok(key)
		return
	}
	if reason := reservedRef(p); reason != "" {
		refused = map[string]string{file: reason} // not handed over: a token is not another pod's to read
	} else if err := m.writePodFile(ctx, p, file); err != nil {
		m.errs.fail(key, "pod from the API server: cannot hand it to the daemon: retrying", err, "pod", key)
		return
	}
	var st *corev1.PodStatus
	switch reason, ok := refused[file]; {
	case local != nil:
		st = &local.Status
	case ok && p.Status.Phase != corev1.PodFailed:
		st = &corev1.PodStatus{Phase: corev1.PodFailed, Reason: ReasonRefused, Message: reason}
	}
	if st != nil {
		if err := m.patchStatus(ctx, p, *st); err != nil {
			m.errs.fail(key, "cannot update the pod's status: retrying", err, "pod", key)
			return
		}
	}
	m.errs.ok(key)
}

// ReasonRefused is the reason of a pod from the API server the daemon
// refused (its manifest checks, podSecurity.cluster): the message is the
// daemon's.
const ReasonRefused = "PodhostRefused"

// stopAPIPod: the deletion steps of syncAPIPod.
func (m *mirrors) stopAPIPod(ctx context.Context, p, local *corev1.Pod, file string) error {
	if local != nil && local.DeletionTimestamp == nil && fileExists(file) && p.DeletionGracePeriodSeconds != nil {
		if err := m.a.b.SetDeletionGrace(ctx, p.Namespace, p.Name, *p.DeletionGracePeriodSeconds); err != nil {
			return fmt.Errorf("deletion grace: %w", err)
		}
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the pod's file: %w", err)
	}
	if local != nil {
		return m.patchStatus(ctx, p, local.Status) // terminating: its status until it is gone
	}
	zero := int64(0)
	err := m.a.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name,
		metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete the stopped pod: %w", err)
	}
	if err == nil {
		m.a.log.Info("the pod from the API server stopped: deleted it", "pod", p.Namespace+"/"+p.Name, "uid", p.UID)
	}
	return nil
}

// removeStaleFiles removes the files of pods the cluster no longer binds
// to this node (deleted with grace 0, or bound elsewhere): want holds
// the files of those it does.
func (m *mirrors) removeStaleFiles(want map[string]bool) {
	entries, err := os.ReadDir(m.a.opts.ClusterDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		f := filepath.Join(m.a.opts.ClusterDir, e.Name())
		if strings.HasSuffix(e.Name(), ".yaml") && !want[f] {
			if err := os.Remove(f); err == nil {
				m.a.log.Info("the pod is no longer bound to this node: removed its file", "file", f)
			}
		}
	}
}

// reservedRef is why p may not run: it references a Secret or ConfigMap
// whose name is that of another pod's token or service variables
// (TokenSecretPrefix, wellknown.ServiceEnvPrefix), which the daemon holds
// for that pod: reading a token, or sending one elsewhere; "" when it
// does not.
func reservedRef(p *corev1.Pod) string {
	cms, secrets := references(p)
	for _, s := range secrets {
		if strings.HasPrefix(s, TokenSecretPrefix) {
			return fmt.Sprintf("secret %q: names starting with %q are podhost's service account tokens: not supported by podhost", s, TokenSecretPrefix)
		}
	}
	for _, c := range cms {
		if strings.HasPrefix(c, wellknown.ServiceEnvPrefix) {
			return fmt.Sprintf("configMap %q: names starting with %q are podhost's service variables: not supported by podhost", c, wellknown.ServiceEnvPrefix)
		}
	}
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// writePodFile writes p's file (its ConfigMaps, Secrets and p, as the
// daemon reads them) when it differs from what the file holds: 0600
// (it may hold Secrets), written to a temp file and renamed.
func (m *mirrors) writePodFile(ctx context.Context, p *corev1.Pod, file string) error {
	data, err := m.podDocument(ctx, p)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(file); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".write-*")
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		err = pe.Err // not the random name: the error is logged once until it changes
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write the pod's file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write the pod's file: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("write the pod's file: %w", err)
	}
	m.a.log.Info("handed the pod from the API server to the daemon", "pod", p.Namespace+"/"+p.Name, "file", file)
	return nil
}

// podDocument is p's file: the ConfigMaps and Secrets it references that
// exist (a missing one is missing for the daemon too, which reports it as
// the kubelet does), the Secrets of its service account tokens
// (tokenSources), its service variables (serviceEnvConfigMap), then p (its token projections made secret sources) with its metadata's name, namespace, UID,
// labels and annotations and its spec.
func (m *mirrors) podDocument(ctx context.Context, p *corev1.Pod) ([]byte, error) {
	var docs []any
	cms, secrets := references(p)
	p, tokens, err := m.tokens.tokenSources(ctx, p)
	if err != nil {
		return nil, err
	}
	for _, name := range cms {
		cm, err := m.a.client.CoreV1().ConfigMaps(p.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("configmap %s: %w", name, err)
		}
		docs = append(docs, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace}, Data: cm.Data, BinaryData: cm.BinaryData, Immutable: cm.Immutable})
	}
	for _, name := range secrets {
		s, err := m.a.client.CoreV1().Secrets(p.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("secret %s: %w", name, err)
		}
		docs = append(docs, &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace}, Data: s.Data, Type: s.Type, Immutable: s.Immutable})
	}
	for _, t := range tokens {
		docs = append(docs, t)
	}
	env, err := m.serviceEnvConfigMap(ctx, m.pass, p)
	if err != nil {
		return nil, err
	}
	docs = append(docs, env)
	docs = append(docs, &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, Labels: p.Labels, Annotations: p.Annotations},
		Spec:       p.Spec})
	var buf bytes.Buffer
	for i, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("the pod's file: %w", err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// references are the names of the ConfigMaps and Secrets p references
// (volumes, projected sources, env, envFrom, image pull secrets), each
// once, in order: the kubelet's VisitPodConfigmapNames and
// VisitPodSecretNames (k8s.io/kubernetes, not importable).
func references(p *corev1.Pod) (configMaps, secrets []string) {
	seen := map[string]bool{}
	add := func(list *[]string, kind, name string) {
		if name != "" && !seen[kind+"/"+name] {
			seen[kind+"/"+name] = true
			*list = append(*list, name)
		}
	}
	cm := func(name string) { add(&configMaps, "cm", name) }
	secret := func(name string) { add(&secrets, "secret", name) }
	for _, s := range p.Spec.ImagePullSecrets {
		secret(s.Name)
	}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			cm(v.ConfigMap.Name)
		case v.Secret != nil:
			secret(v.Secret.SecretName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					cm(s.ConfigMap.Name)
				}
				if s.Secret != nil {
					secret(s.Secret.Name)
				}
			}
		}
	}
	visitContainers(p, func(c *corev1.Container) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				cm(e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				secret(e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				cm(e.ValueFrom.ConfigMapKeyRef.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				secret(e.ValueFrom.SecretKeyRef.Name)
			}
		}
	})
	return configMaps, secrets
}

func visitContainers(p *corev1.Pod, f func(*corev1.Container)) {
	for i := range p.Spec.InitContainers {
		f(&p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		f(&p.Spec.Containers[i])
	}
}
