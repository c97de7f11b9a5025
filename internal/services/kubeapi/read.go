package kubeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func methodNotSupported(ri *requestInfo) error {
	return apierrors.NewMethodNotSupported(ri.groupResource(), ri.verb)
}

func notFoundPath(path string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound,
		Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource",
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeUnexpectedServerResponse, Message: "404 page not found: " + path}}}}}
}

// writeJSONRaw answers v as plain JSON (for what is no runtime.Object).
func writeJSONRaw(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// kindOf is the request's kind, or a 404 for a resource with no objects
// of its own (subresource-only, metrics).
func kindOf(ri *requestInfo) (*kind, error) {
	k := kinds[ri.groupResource()]
	if k == nil {
		return nil, apierrors.NewNotFound(ri.groupResource(), ri.name)
	}
	return k, nil
}

// find is the named object of the request (synced now).
func (s *Server) find(ri *requestInfo) (runtime.Object, *kind, error) {
	k, err := kindOf(ri)
	if err != nil {
		return nil, nil, err
	}
	objs, _ := s.hub.snapshot(k.key)
	for _, o := range objs {
		m, _ := meta.Accessor(o)
		if m.GetName() == ri.name && m.GetNamespace() == ri.namespace {
			return o, k, nil
		}
	}
	return nil, k, apierrors.NewNotFound(ri.groupResource(), ri.name)
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	a, err := negotiate(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	obj, k, err := s.find(ri)
	if err != nil {
		writeError(w, r, err)
		return
	}
	m, _ := meta.Accessor(obj)
	s.warnPods(w, k)
	s.writeObjects(w, r, a, k, ri.gv, []runtime.Object{obj}, m.GetResourceVersion(), false)
}

// listOptions reads the query as metav1.ListOptions and its selectors.
func listOptions(r *http.Request, ri *requestInfo, k *kind) (metav1.ListOptions, selection, error) {
	var opts metav1.ListOptions
	if err := paramCodec.DecodeParameters(r.URL.Query(), unversioned, &opts); err != nil {
		return opts, selection{}, apierrors.NewBadRequest(err.Error())
	}
	sel := selection{namespace: ri.namespace}
	var err error
	if sel.labels, err = labels.Parse(opts.LabelSelector); err != nil {
		return opts, sel, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	if sel.fields, err = fields.ParseSelector(opts.FieldSelector); err != nil {
		return opts, sel, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	if ri.name != "" { // a watch of one object by its path
		sel.fields = fields.AndSelectors(sel.fields, fields.OneTermEqualSelector("metadata.name", ri.name))
	}
	if f, ok := k.fieldsAllowed(sel.fields, sample(k)); !ok {
		return opts, sel, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", f))
	}
	return opts, sel, nil
}

// sample is a zero object of k (its field set's names).
func sample(k *kind) runtime.Object {
	o, _ := scheme.New(k.gvk)
	return o
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	a, err := negotiate(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	k, err := kindOf(ri)
	if err != nil {
		writeError(w, r, err)
		return
	}
	opts, sel, err := listOptions(r, ri, k)
	if err != nil {
		writeError(w, r, err)
		return
	}
	objs, rv := s.hub.snapshot(k.key)
	if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact && opts.ResourceVersion != strconv.FormatUint(rv, 10) {
		writeError(w, r, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %s (%d)", opts.ResourceVersion, rv)))
		return
	}
	var out []runtime.Object
	for _, o := range objs {
		if k.matches(sel, o) {
			out = append(out, o)
		}
	}
	sortObjects(out)
	s.warnPods(w, k)
	s.writeObjects(w, r, a, k, ri.gv, out, strconv.FormatUint(rv, 10), true)
}

// writeObjects answers one object (list false) or a list, as the client
// asked: the object or its kind's List, a Table, or partial metadata.
func (s *Server) writeObjects(w http.ResponseWriter, r *http.Request, a accept, k *kind, gv schema.GroupVersion, objs []runtime.Object, rv string, list bool) {
	switch {
	case a.table:
		var io metav1.TableOptions
		_ = paramCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &io)
		writeObject(w, a, http.StatusOK, k.table.toTable(objs, rv, io.IncludeObject, s.opts.Now()), metav1.SchemeGroupVersion)
	case a.partial && list:
		l := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
		for _, o := range objs {
			l.Items = append(l.Items, *partial(o))
		}
		writeObject(w, a, http.StatusOK, l, metav1.SchemeGroupVersion)
	case a.partial:
		writeObject(w, a, http.StatusOK, partial(objs[0]), metav1.SchemeGroupVersion)
	case list:
		l := k.newList()
		if err := meta.SetList(l, objs); err != nil {
			writeError(w, r, err)
			return
		}
		lm, _ := meta.ListAccessor(l)
		lm.SetResourceVersion(rv)
		writeObject(w, a, http.StatusOK, l, gv)
	default:
		writeObject(w, a, http.StatusOK, objs[0], gv)
	}
}

// namespaces: "default" and every namespace an object of the manifest dir
// is in, Active, as old as the node.
func (s *Server) namespaces() []runtime.Object {
	names := map[string]bool{metav1.NamespaceDefault: true}
	for _, p := range s.b.Pods() {
		names[p.Namespace] = true
	}
	for _, c := range s.b.ConfigMaps() {
		names[c.Namespace] = true
	}
	for _, c := range s.b.Secrets() {
		names[c.Namespace] = true
	}
	var created metav1.Time
	if n, err := s.b.Node(s.ctx()); err == nil {
		created = n.CreationTimestamp
	}
	var out []runtime.Object
	for n := range names {
		out = append(out, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n, CreationTimestamp: created,
			Labels: map[string]string{corev1.LabelMetadataName: n}},
			Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}})
	}
	return out
}

func (s *Server) nodes() []runtime.Object {
	n, err := s.b.Node(s.ctx())
	if err != nil {
		s.log.Warn("kube api: node", "err", err)
		return nil
	}
	return []runtime.Object{n}
}

// eventsV1 is the events.k8s.io/v1 view of core events.
func eventsV1(evs []*corev1.Event) []runtime.Object {
	out := make([]runtime.Object, 0, len(evs))
	for _, e := range evs {
		v := &eventsv1.Event{ObjectMeta: e.ObjectMeta, EventTime: e.EventTime, Action: e.Action, Reason: e.Reason,
			Regarding: e.InvolvedObject, Related: e.Related, Note: e.Message, Type: e.Type,
			ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance,
			DeprecatedSource: e.Source, DeprecatedFirstTimestamp: e.FirstTimestamp,
			DeprecatedLastTimestamp: e.LastTimestamp, DeprecatedCount: e.Count}
		if e.Series != nil {
			v.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
		}
		out = append(out, v)
	}
	return out
}
