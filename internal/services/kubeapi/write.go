package kubeapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// Writes go to the manifest dir, whose documents are what users wrote:
// no defaults, no status. A write of an existing object is therefore never
// the client's object written as it is (it carries the defaults and status
// a GET added, and writing them would change the pod's identity and
// restart it): it is the change the client made — the strategic merge
// patch from the live object to the one the client wants, with the
// server's fields left out of both — applied to the stored document. An
// update, every kind of patch and a server-side apply all reduce to that.

// writable: the resources whose objects are documents of the manifest dir.
func writable(ri *requestInfo) bool {
	return ri.gv == coreGV && (ri.resource.name == "pods" || ri.resource.name == "configmaps" || ri.resource.name == "secrets")
}

// writeOptions are the query parameters every write takes.
type writeOptions struct {
	dryRun          bool
	fieldManager    string
	fieldValidation string // Strict, Warn (default), Ignore
}

func readWriteOptions(r *http.Request) (writeOptions, error) {
	q := r.URL.Query()
	o := writeOptions{fieldManager: q.Get("fieldManager"), fieldValidation: q.Get("fieldValidation")}
	for _, d := range q["dryRun"] {
		if d != metav1.DryRunAll {
			return o, apierrors.NewBadRequest(fmt.Sprintf("unsupported dry run value %q", d))
		}
		o.dryRun = true
	}
	switch o.fieldValidation {
	case "":
		o.fieldValidation = metav1.FieldValidationWarn
	case metav1.FieldValidationStrict, metav1.FieldValidationWarn, metav1.FieldValidationIgnore:
	default:
		return o, apierrors.NewBadRequest(fmt.Sprintf("fieldValidation must be one of Strict, Warn, Ignore, got %q", o.fieldValidation))
	}
	return o, nil
}

// decodeObject decodes a request body into a new object of k's kind: with
// Strict an unknown or duplicate field is a 400, with Warn it is a Warning
// header (and dropped), with Ignore it is dropped.
func decodeObject(w http.ResponseWriter, body []byte, ct string, k *kind, fv string) (runtime.Object, error) {
	mt := ct
	if i := indexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	info, ok := runtime.SerializerInfoForMediaType(strictCodecs.SupportedMediaTypes(), mt)
	if !ok {
		return nil, unsupportedMediaType(ct)
	}
	into, err := scheme.New(k.gvk)
	if err != nil {
		return nil, err
	}
	strict := info.StrictSerializer
	if strict == nil {
		strict = info.Serializer
	}
	obj, gvk, err := strictCodecs.DecoderToVersion(strict, k.gvk.GroupVersion()).Decode(body, &k.gvk, into)
	if err != nil && runtime.IsStrictDecodingError(err) && fv != metav1.FieldValidationStrict {
		if fv == metav1.FieldValidationWarn {
			sde, _ := runtime.AsStrictDecodingError(err)
			for _, e := range sde.Errors() {
				addWarning(w, e.Error())
			}
		}
		into, _ = scheme.New(k.gvk)
		obj, gvk, err = laxCodecs.DecoderToVersion(info.Serializer, k.gvk.GroupVersion()).Decode(body, &k.gvk, into)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if *gvk != k.gvk {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), k.gvk.GroupVersion()))
	}
	return obj, nil
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// checkIdentity: the object's namespace and name agree with the path
// (an empty namespace takes the path's).
func checkIdentity(obj runtime.Object, ri *requestInfo, needName bool) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(ri.namespace)
	}
	if m.GetNamespace() != ri.namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		return apierrors.NewBadRequest("metadata.generateName: podhost needs a name (a manifest file is named after it)")
	}
	if needName && m.GetName() != ri.name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), ri.name))
	}
	return nil
}

// cleanDoc is obj as the JSON document the manifest dir would hold:
// without status, the fields an API server sets, podhost's own
// annotations and a pod's nodeName (keepManaged keeps managedFields, which
// server-side apply needs next time).
func cleanDoc(obj runtime.Object, keepManaged bool) (map[string]any, error) {
	b, err := runtime.Encode(laxCodecs.LegacyCodec(corev1.SchemeGroupVersion), obj)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	delete(doc, "status")
	if md, ok := doc["metadata"].(map[string]any); ok {
		for _, f := range []string{"creationTimestamp", "resourceVersion", "generation", "selfLink", "uid",
			"deletionTimestamp", "deletionGracePeriodSeconds"} {
			delete(md, f)
		}
		if !keepManaged {
			delete(md, "managedFields")
		}
		if ann, ok := md["annotations"].(map[string]any); ok {
			for _, a := range manifest.PodhostAnnotations {
				delete(ann, a)
			}
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	if doc["kind"] == "Pod" {
		if spec, ok := doc["spec"].(map[string]any); ok {
			delete(spec, "nodeName")
		}
	}
	return doc, nil
}

// changeOf is the strategic merge patch from the live object to the wanted
// one, both cleaned: what the client changed.
func changeOf(live, want runtime.Object, keepManaged bool) ([]byte, error) {
	a, err := cleanDoc(live, keepManaged)
	if err != nil {
		return nil, err
	}
	b, err := cleanDoc(want, keepManaged)
	if err != nil {
		return nil, err
	}
	aj, _ := json.Marshal(a)
	bj, _ := json.Marshal(b)
	return strategicpatch.CreateTwoWayMergePatch(aj, bj, dataStruct(live))
}

// dataStruct is the Go type strategic merge patches of obj follow.
func dataStruct(obj runtime.Object) any {
	switch obj.(type) {
	case *corev1.Pod:
		return &corev1.Pod{}
	case *corev1.Secret:
		return &corev1.Secret{}
	}
	return &corev1.ConfigMap{}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func unsupportedMediaType(ct string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType,
		Reason: metav1.StatusReasonUnsupportedMediaType, Message: "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml; got " + ct}}
}

// decodeBody decodes a request body (JSON, YAML or protobuf by its
// content type) into into, an object of kind gvk.
func decodeBody(body []byte, ct string, gvk schema.GroupVersionKind, into runtime.Object) error {
	info, ok := runtime.SerializerInfoForMediaType(laxCodecs.SupportedMediaTypes(), mediaType(ct))
	if !ok {
		return unsupportedMediaType(ct)
	}
	if _, _, err := laxCodecs.DecoderToVersion(info.Serializer, gvk.GroupVersion()).Decode(body, &gvk, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}
