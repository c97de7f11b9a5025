package kubeapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// writeSetup is what every write handler reads first.
func (s *Server) writeSetup(w http.ResponseWriter, r *http.Request, ri *requestInfo) (accept, *kind, writeOptions, bool) {
	a, err := negotiate(r)
	if err == nil && !writable(ri) {
		err = methodNotSupported(ri)
	}
	var k *kind
	if err == nil {
		k, err = kindOf(ri)
	}
	var o writeOptions
	if err == nil {
		o, err = readWriteOptions(r)
	}
	if err != nil {
		writeError(w, r, err)
		return a, nil, o, false
	}
	a.table, a.partial = false, false
	return a, k, o, true
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	a, k, o, ok := s.writeSetup(w, r, ri)
	if !ok {
		return
	}
	body, err := readBody(r)
	if err == nil {
		var obj runtime.Object
		if obj, err = decodeObject(w, body, r.Header.Get("Content-Type"), k, o.fieldValidation); err == nil {
			if err = checkIdentity(obj, ri, false); err == nil {
				ri.name = mustName(obj)
				obj, err = s.putObject(r, ri, obj, true, o)
				if err == nil {
					writeObject(w, a, http.StatusCreated, obj, ri.gv)
					return
				}
			}
		}
	}
	writeError(w, r, err)
}

func mustName(obj runtime.Object) string {
	m, _ := meta.Accessor(obj)
	return m.GetName()
}

// putObject writes obj as a new document (create) or applies its change
// against the live object to the stored document.
func (s *Server) putObject(r *http.Request, ri *requestInfo, obj runtime.Object, create bool, o writeOptions) (runtime.Object, error) {
	var doc []byte
	if create {
		d, err := cleanDoc(obj, false)
		if err != nil {
			return nil, err
		}
		doc, _ = json.Marshal(d)
	} else {
		live, _, err := s.find(ri)
		if err != nil {
			return nil, err
		}
		if err := checkPrecondition(live, obj, ri); err != nil {
			return nil, err
		}
		if doc, err = s.changedDoc(ri, live, obj, false); err != nil {
			return nil, err
		}
	}
	var before runtime.Object
	if !create {
		before, _, _ = s.find(ri)
	}
	return s.put(r.Context(), ri, doc, create, o.dryRun, before)
}

// changedDoc is the stored document with the change from live to want.
func (s *Server) changedDoc(ri *requestInfo, live, want runtime.Object, keepManaged bool) ([]byte, error) {
	patch, err := changeOf(live, want, keepManaged)
	if err != nil {
		return nil, err
	}
	stored, err := s.store.Stored(ri.groupResource(), ri.namespace, ri.name)
	if err != nil {
		return nil, err
	}
	return strategicpatch.StrategicMergePatch(stored, patch, dataStruct(live))
}

// checkPrecondition: an update naming a resourceVersion must name the live
// one (optimistic concurrency, as on the API server).
func checkPrecondition(live, want runtime.Object, ri *requestInfo) error {
	wm, _ := meta.Accessor(want)
	lm, _ := meta.Accessor(live)
	if rv := wm.GetResourceVersion(); rv != "" && rv != lm.GetResourceVersion() {
		return apierrors.NewConflict(ri.groupResource(), ri.name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	return nil
}

func (s *Server) update(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	a, k, o, ok := s.writeSetup(w, r, ri)
	if !ok {
		return
	}
	body, err := readBody(r)
	if err == nil {
		var obj runtime.Object
		if obj, err = decodeObject(w, body, r.Header.Get("Content-Type"), k, o.fieldValidation); err == nil {
			if err = checkIdentity(obj, ri, true); err == nil {
				if obj, err = s.putObject(r, ri, obj, false, o); err == nil {
					writeObject(w, a, http.StatusOK, obj, ri.gv)
					return
				}
			}
		}
	}
	writeError(w, r, err)
}

func (s *Server) patch(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	a, k, o, ok := s.writeSetup(w, r, ri)
	if !ok {
		return
	}
	body, err := readBody(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	pt := types.PatchType(mediaType(r.Header.Get("Content-Type")))
	if pt == types.ApplyYAMLPatchType || pt == types.ApplyPatchType {
		s.apply(w, r, ri, a, k, o, body)
		return
	}
	live, _, err := s.find(ri)
	if err != nil {
		writeError(w, r, err)
		return
	}
	want, err := patched(live, pt, body, k)
	if err == nil {
		var doc []byte
		if doc, err = s.changedDoc(ri, live, want, false); err == nil {
			var obj runtime.Object
			if obj, err = s.put(r.Context(), ri, doc, false, o.dryRun, live); err == nil {
				writeObject(w, a, http.StatusOK, obj, ri.gv)
				return
			}
		}
	}
	writeError(w, r, err)
}

func mediaType(ct string) string {
	if i := indexByte(ct, ';'); i >= 0 {
		return ct[:i]
	}
	return ct
}

// patched is live with a JSON, merge or strategic merge patch applied, as
// the API server applies them (evanphx/json-patch, apimachinery's
// strategicpatch).
func patched(live runtime.Object, pt types.PatchType, patch []byte, k *kind) (runtime.Object, error) {
	lj, err := runtime.Encode(laxCodecs.LegacyCodec(k.gvk.GroupVersion()), live)
	if err != nil {
		return nil, err
	}
	var out []byte
	switch pt {
	case types.JSONPatchType:
		p, perr := jsonpatch.DecodePatch(patch)
		if perr != nil {
			return nil, apierrors.NewBadRequest(perr.Error())
		}
		out, err = p.Apply(lj)
	case types.MergePatchType:
		out, err = jsonpatch.MergePatch(lj, patch)
	case types.StrategicMergePatchType:
		out, err = strategicpatch.StrategicMergePatch(lj, patch, dataStruct(live))
	default:
		return nil, unsupportedMediaType(string(pt))
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj, err := scheme.New(k.gvk)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(out, obj); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return obj, nil
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	a, _, o, ok := s.writeSetup(w, r, ri)
	if !ok {
		return
	}
	var opts metav1.DeleteOptions
	if body, err := readBody(r); err != nil {
		writeError(w, r, err)
		return
	} else if len(body) > 0 {
		if err := json.Unmarshal(body, &opts); err != nil {
			writeError(w, r, apierrors.NewBadRequest(err.Error()))
			return
		}
	}
	if err := paramCodec.DecodeParameters(r.URL.Query(), unversioned, &opts); err != nil {
		writeError(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	live, _, err := s.find(ri)
	if err == nil && opts.Preconditions != nil {
		lm, _ := meta.Accessor(live)
		if p := opts.Preconditions; p.UID != nil && *p.UID != lm.GetUID() || p.ResourceVersion != nil && *p.ResourceVersion != lm.GetResourceVersion() {
			err = apierrors.NewConflict(ri.groupResource(), ri.name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
		}
	}
	if err == nil {
		err = s.store.Delete(r.Context(), ri.groupResource(), ri.namespace, ri.name, opts.GracePeriodSeconds, o.dryRun)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	if !o.dryRun {
		s.settle(r.Context(), ri, func(o runtime.Object) bool { return o == nil || deletionStarted(o) })
	}
	// The object as it now is: a pod terminates (deletionTimestamp set)
	// until its containers are gone, as on a cluster.
	writeObject(w, a, http.StatusOK, deleting(live, opts.GracePeriodSeconds, s.opts.Now()), ri.gv)
}

func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	_, k, o, ok := s.writeSetup(w, r, ri)
	if !ok {
		return
	}
	_, sel, err := listOptions(r, ri, k)
	if err != nil {
		writeError(w, r, err)
		return
	}
	objs, _ := s.hub.snapshot(k.key)
	for _, obj := range objs {
		if !k.matches(sel, obj) {
			continue
		}
		m, _ := meta.Accessor(obj)
		if err := s.store.Delete(r.Context(), ri.groupResource(), m.GetNamespace(), m.GetName(), nil, o.dryRun); err != nil && !apierrors.IsNotFound(err) {
			writeError(w, r, err)
			return
		}
	}
	writeObject(w, accept{mediaType: runtime.ContentTypeJSON}, http.StatusOK,
		&metav1.Status{Status: metav1.StatusSuccess}, unversioned)
}
