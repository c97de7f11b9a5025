package kubeapi

import (
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"
)

// Server-side apply is apimachinery's field manager (the API server's),
// over the schema generated with the OpenAPI documents. An object's
// managedFields are kept in its manifest document once it has been
// applied server-side (so ownership survives restarts); they are a
// mutable path, never part of a pod's identity.

var (
	fieldManagersMu sync.Mutex
	fieldManagers   = map[schema.GroupVersionKind]*managedfields.FieldManager{}
)

// fieldManager is k's field manager, built once. Pods' status is reset on
// apply, as the API server's pod strategy does.
func (s *Server) fieldManager(k *kind) (*managedfields.FieldManager, error) {
	if s.opts.TypeConverter == nil {
		return nil, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: k.key}, "apply")
	}
	tc, err := s.opts.TypeConverter()
	if err != nil {
		return nil, err
	}
	fieldManagersMu.Lock()
	defer fieldManagersMu.Unlock()
	if fm := fieldManagers[k.gvk]; fm != nil {
		return fm, nil
	}
	reset := map[fieldpath.APIVersion]fieldpath.Filter{}
	if k.gvk.Kind == "Pod" {
		reset["v1"] = fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("status")))
	}
	fm, err := managedfields.NewDefaultFieldManager(tc, scheme, scheme, scheme, k.gvk, k.gvk.GroupVersion(), "", reset)
	if err != nil {
		return nil, err
	}
	fieldManagers[k.gvk] = fm
	return fm, nil
}

// apply is a server-side apply (PATCH application/apply-patch+yaml): the
// applied configuration merged into the live object by the field manager
// (conflicts as the API server's, force to take fields over), or a new
// object when there is none.
func (s *Server) apply(w http.ResponseWriter, r *http.Request, ri *requestInfo, a accept, k *kind, o writeOptions, body []byte) {
	obj, created, err := s.applied(r, ri, k, o, body)
	if err != nil {
		writeError(w, r, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	writeObject(w, a, code, obj, ri.gv)
}

func (s *Server) applied(r *http.Request, ri *requestInfo, k *kind, o writeOptions, body []byte) (runtime.Object, bool, error) {
	if o.fieldManager == "" {
		return nil, false, apierrors.NewBadRequest("PATCH requests of type apply must set fieldManager")
	}
	fm, err := s.fieldManager(k)
	if err != nil {
		return nil, false, err
	}
	cfg := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(body, &cfg.Object); err != nil {
		return nil, false, apierrors.NewBadRequest(err.Error())
	}
	if cfg.GetName() != ri.name || cfg.GetNamespace() != "" && cfg.GetNamespace() != ri.namespace {
		return nil, false, apierrors.NewBadRequest("the name and namespace of the applied object must match the request's")
	}
	force := r.URL.Query().Get("force") == "true"
	live, _, err := s.find(ri)
	create := apierrors.IsNotFound(err)
	switch {
	case create:
		empty, _ := scheme.New(k.gvk)
		m, _ := meta.Accessor(empty)
		m.SetName(ri.name)
		m.SetNamespace(ri.namespace)
		live = empty
	case err != nil:
		return nil, false, err
	}
	want, err := fm.Apply(live, cfg, o.fieldManager, force)
	if err != nil {
		return nil, false, err
	}
	stampManaged(want, s.opts.Now())
	var doc []byte
	if create {
		d, err := cleanDoc(want, true)
		if err != nil {
			return nil, false, err
		}
		doc, err = jsonMarshal(d)
		if err != nil {
			return nil, false, err
		}
	} else if doc, err = s.changedDoc(ri, live, want, true); err != nil {
		return nil, false, err
	}
	obj, err := s.put(r.Context(), ri, doc, create, o.dryRun, live)
	return obj, create, err
}

// stampManaged gives the managed fields entries without a time the
// current one (the field manager leaves it to the storage layer).
func stampManaged(obj runtime.Object, now time.Time) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	mf := m.GetManagedFields()
	for i := range mf {
		if mf[i].Time == nil {
			t := metav1.NewTime(now.Truncate(time.Second))
			mf[i].Time = &t
		}
	}
	m.SetManagedFields(mf)
}

// deleting is obj as a delete leaves it: a pod terminating, with its
// deletionTimestamp and grace period (the given one, else its own).
func deleting(obj runtime.Object, grace *int64, now time.Time) runtime.Object {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		m, _ := meta.Accessor(obj)
		return &metav1.Status{Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{Name: m.GetName(), UID: m.GetUID()}}
	}
	p = p.DeepCopy()
	if p.DeletionTimestamp == nil {
		t := metav1.NewTime(now)
		p.DeletionTimestamp = &t
	}
	g := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if p.Spec.TerminationGracePeriodSeconds != nil {
		g = *p.Spec.TerminationGracePeriodSeconds
	}
	if grace != nil {
		g = *grace
	}
	p.DeletionGracePeriodSeconds = &g
	return p
}
