package configdata

import (
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodRefs returns the ConfigMaps and Secrets pod references (env, envFrom,
// configMap, secret and projected volumes, imagePullSecrets), sorted and
// without duplicates.
func PodRefs(pod *corev1.Pod) []Ref {
	seen := map[Ref]bool{}
	add := func(k Kind, name string) {
		if name != "" {
			seen[Ref{k, pod.Namespace, name}] = true
		}
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			for _, f := range c.EnvFrom {
				if f.ConfigMapRef != nil {
					add(ConfigMap, f.ConfigMapRef.Name)
				}
				if f.SecretRef != nil {
					add(Secret, f.SecretRef.Name)
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					add(ConfigMap, r.Name)
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					add(Secret, r.Name)
				}
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil {
			add(ConfigMap, v.ConfigMap.Name)
		}
		if v.Secret != nil {
			add(Secret, v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					add(ConfigMap, src.ConfigMap.Name)
				}
				if src.Secret != nil {
					add(Secret, src.Secret.Name)
				}
			}
		}
	}
	for _, r := range pod.Spec.ImagePullSecrets {
		add(Secret, r.Name)
	}
	out := make([]Ref, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Ref) int {
		if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
			return c
		}
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Index maps each ConfigMap and Secret to the pods that reference it, so
// that a change wakes exactly those pods.
type Index struct {
	mu    sync.Mutex
	byRef map[Ref]map[types.UID]bool
	byPod map[types.UID][]Ref
}

// NewIndex returns an empty Index.
func NewIndex() *Index {
	return &Index{byRef: map[Ref]map[types.UID]bool{}, byPod: map[types.UID][]Ref{}}
}

// Set records the references of pod (replacing earlier ones of its UID).
func (x *Index) Set(pod *corev1.Pod) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.remove(pod.UID)
	refs := PodRefs(pod)
	if len(refs) == 0 {
		return
	}
	x.byPod[pod.UID] = refs
	for _, r := range refs {
		if x.byRef[r] == nil {
			x.byRef[r] = map[types.UID]bool{}
		}
		x.byRef[r][pod.UID] = true
	}
}

// Delete forgets pod uid.
func (x *Index) Delete(uid types.UID) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.remove(uid)
}

func (x *Index) remove(uid types.UID) {
	for _, r := range x.byPod[uid] {
		delete(x.byRef[r], uid)
		if len(x.byRef[r]) == 0 {
			delete(x.byRef, r)
		}
	}
	delete(x.byPod, uid)
}

// Pods returns the pods that reference any of refs.
func (x *Index) Pods(refs []Ref) []types.UID {
	x.mu.Lock()
	defer x.mu.Unlock()
	seen := map[types.UID]bool{}
	var out []types.UID
	for _, r := range refs {
		for uid := range x.byRef[r] {
			if !seen[uid] {
				seen[uid] = true
				out = append(out, uid)
			}
		}
	}
	slices.Sort(out)
	return out
}
