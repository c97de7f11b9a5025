package source

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/order"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// Combine merges the snapshots of several sources, in priority order (the
// manifest dir first, then the manifest URL). A pod whose full name an
// earlier source already defines is dropped with a FileError of its own
// source: the first definition wins, as between two files of the dir.
//
// Then the podhost.io/after annotations are checked across the merged set:
// a pod on a dependency cycle (or with an invalid annotation) is dropped
// with a FileError of its source. A dependency on a pod that is not there
// is no error here: the pod waits for it (see internal/kubelet/manager).
func Combine(snaps ...Snapshot) Snapshot {
	var out Snapshot
	owner := map[string]string{} // full name → its source
	extra := map[string][]error{}
	seen := map[string]bool{}       // "kind ns/name" of workloads, Services and ServiceAccounts
	objOwner := map[string]string{} // "kind ns/name" of ConfigMaps and Secrets → their source
	for _, s := range snaps {
		for _, p := range s.Pods {
			name, src := manifest.FullName(p), sourceOf(p)
			if other, dup := owner[name]; dup {
				extra[src] = append(extra[src], fmt.Errorf("%s: duplicate pod %s, already defined in %s", shortSource(src), name, other))
				continue
			}
			owner[name] = src
			out.Pods = append(out.Pods, p)
		}
		out.ConfigMaps = appendOwned(out.ConfigMaps, s.ConfigMaps, "ConfigMap", objOwner, extra)
		out.Secrets = appendOwned(out.Secrets, s.Secrets, "Secret", objOwner, extra)
		for _, w := range s.Workloads {
			if key := w.Kind + " " + w.Meta().Namespace + "/" + w.Meta().Name; !seen[key] {
				seen[key] = true
				out.Workloads = append(out.Workloads, w)
			}
		}
		out.Services = appendFirst(out.Services, s.Services, seen)
		out.ServiceAccounts = appendFirst(out.ServiceAccounts, s.ServiceAccounts, seen)
		for _, ig := range s.Ignored {
			if key := ig.Kind + " " + ig.ObjectMeta.Namespace + "/" + ig.ObjectMeta.Name; !seen[key] {
				seen[key] = true
				out.Ignored = append(out.Ignored, ig)
			}
		}
		out.Errors = append(out.Errors, s.Errors...)
		out.Duplicates = append(out.Duplicates, s.Duplicates...)
	}
	if problems := order.Check(out.Pods, order.CheckOptions{}); len(problems) > 0 {
		bad := map[*corev1.Pod]bool{}
		for _, pr := range problems {
			bad[pr.Pod] = true
			src := sourceOf(pr.Pod)
			extra[src] = append(extra[src], fmt.Errorf("%s: %w (pod not started)", shortSource(src), pr.Err))
		}
		out.Pods = slices.DeleteFunc(slices.Clone(out.Pods), func(p *corev1.Pod) bool { return bad[p] })
	}
	out.Errors = mergeErrors(out.Errors, extra)
	return out
}

// Refuse drops the pods of s that refused names, adding each one's reason
// as a line "<file>: <reason>" to the FileError of the pod's source (the
// config-source annotation: a file, or the URL). A policy applied to one
// source's snapshot (internal/desired/podsecurity) refuses pods this way.
func (s Snapshot) Refuse(refused map[*corev1.Pod]error) Snapshot {
	if len(refused) == 0 {
		return s
	}
	extra := map[string][]error{}
	for p, err := range refused {
		src := sourceOf(p)
		extra[src] = append(extra[src], fmt.Errorf("%s: %w", shortSource(src), err))
	}
	for src := range extra {
		slices.SortFunc(extra[src], func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	}
	s.Pods = slices.DeleteFunc(slices.Clone(s.Pods), func(p *corev1.Pod) bool { return refused[p] != nil })
	s.Errors = mergeErrors(s.Errors, extra)
	return s
}

// appendFirst appends the objects (Services, ServiceAccounts) of one source
// whose kind and namespace/name no earlier source defined: the first
// definition wins, as for pods (each source already reported its own
// duplicates).
func appendFirst[T interface {
	GetNamespace() string
	GetName() string
}](out, objs []T, seen map[string]bool) []T {
	for _, o := range objs {
		key := fmt.Sprintf("%T %s/%s", o, o.GetNamespace(), o.GetName())
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, o)
	}
	return out
}

// appendOwned appends the ConfigMaps or Secrets of one source whose
// namespace/name no earlier source declared; a later source's declaration
// is not used and is an error of its source naming the owner (as a second
// file's in one source, Duplicate): its pods do not read the owner's
// object either (they read their own source's only, configdata.Store.For),
// for them the object is missing until the owner's declaration is gone.
func appendOwned[T interface {
	GetNamespace() string
	GetName() string
	GetAnnotations() map[string]string
}](out, objs []T, kind string, owner map[string]string, extra map[string][]error) []T {
	for _, o := range objs {
		key := kind + " " + o.GetNamespace() + "/" + o.GetName()
		src := o.GetAnnotations()[wellknown.AnnotationConfigSource]
		if first, dup := owner[key]; dup {
			extra[src] = append(extra[src], fmt.Errorf("%s: duplicate %s %s/%s, already defined in %s (this source's is not used, and its pods do not read the other's)",
				shortSource(src), kind, o.GetNamespace(), o.GetName(), shortSource(first)))
			continue
		}
		owner[key] = src
		out = append(out, o)
	}
	return out
}

// mergeErrors adds extra errors to the FileError of their source (or a new
// one), sorted by File.
func mergeErrors(errs []FileError, extra map[string][]error) []FileError {
	if len(extra) == 0 {
		return errs
	}
	errs = slices.Clone(errs)
	for src, more := range extra {
		i := slices.IndexFunc(errs, func(fe FileError) bool { return fe.File == src })
		if i < 0 {
			errs = append(errs, FileError{File: src, Err: errors.Join(more...)})
			continue
		}
		errs[i].Err = errors.Join(append([]error{errs[i].Err}, more...)...)
	}
	slices.SortFunc(errs, func(a, b FileError) int { return strings.Compare(a.File, b.File) })
	return errs
}

func sourceOf(p *corev1.Pod) string { return p.Annotations[wellknown.AnnotationConfigSource] }

// shortSource is how error lines name a source: a file's base name (as the
// dir's own errors do), a URL in full.
func shortSource(src string) string {
	if strings.Contains(src, "://") {
		return src
	}
	if i := strings.LastIndexByte(src, '/'); i >= 0 {
		return src[i+1:]
	}
	return src
}

// Merge reads snapshots from every input and sends their Combine to out:
// the first one once each input sent its first snapshot (so no source's
// pods look removed at start), then one per input snapshot whose merge
// changed. It returns when ctx is done or every input is closed.
func Merge(ctx context.Context, out chan<- Snapshot, ins ...<-chan Snapshot) {
	last := make([]*Snapshot, len(ins))
	cases := make([]<-chan Snapshot, len(ins))
	copy(cases, ins)
	sent, sentAny, open := "", false, len(ins)
	for open > 0 {
		i, snap, ok := recvAny(ctx, cases)
		if i < 0 {
			return
		}
		if !ok {
			cases[i] = nil
			open--
			continue
		}
		last[i] = &snap
		if slices.Contains(last, nil) {
			continue
		}
		all := make([]Snapshot, len(last))
		for j, s := range last {
			all[j] = *s
		}
		merged := Combine(all...)
		if key := merged.key(); key != sent || !sentAny {
			select {
			case out <- merged:
				sent, sentAny = key, true
			case <-ctx.Done():
				return
			}
		}
	}
}

// recvAny receives from the first ready channel (nil channels never are);
// i is -1 when ctx is done.
func recvAny(ctx context.Context, chans []<-chan Snapshot) (i int, s Snapshot, ok bool) {
	cases := make([]reflect.SelectCase, 0, len(chans)+1)
	for _, c := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	i, v, ok := reflect.Select(cases)
	if i == len(chans) {
		return -1, s, false
	}
	if ok {
		s = v.Interface().(Snapshot)
	}
	return i, s, ok
}
