// Package manifest turns manifest files into desired pods: it decodes YAML or
// JSON (several documents per file) strictly into k8s.io/api core/v1 Pods,
// applies the defaults the kubelet applies to static pods, validates
// everything podhost will run (with field paths in every error), computes the
// spec hash, the identity hash and the pod UID, and sets the podhost
// annotations.
//
// It is pure: apart from ReadFile it does no I/O beyond the bytes given.
//
// A file is all or nothing: if any document fails, Decode returns no pods
// and an ErrorList with one line per problem, e.g.
//
//	web.yaml: spec.containers[0].image: Required value
//	web.yaml: [doc 2] spec.volumes[2].nfs: Unsupported value: "nfs": not supported by podhost (supported: configMap, downwardAPI, emptyDir, hostPath, image, projected, secret)
package manifest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// MaxFileSize is the largest manifest file accepted, in bytes.
const MaxFileSize = 1 << 20

var podType = reflect.TypeFor[corev1.Pod]()

// Decode parses every document in data (YAML or JSON, multi-document; empty
// documents are skipped), strictly, then defaults, validates, hashes, and
// sets the UID and the config-hash and config-source annotations of each
// pod. file is used in errors (its base name) and in the config-source
// annotation (as given). On any error it returns (nil, ErrorList). A file
// with no documents yields no pods and no error.
func Decode(file string, data []byte) ([]*corev1.Pod, error) {
	objs, err := DecodeObjects(file, data)
	if err != nil {
		return nil, err
	}
	return objs.Pods, nil
}

// DecodeObjects is Decode for every kind a manifest may hold: Pods,
// ConfigMaps and Secrets (see Objects). The same all-or-nothing rule
// applies to the whole file.
func DecodeObjects(file string, data []byte) (Objects, error) {
	if err := checkInput(data); err != nil {
		return Objects{}, fileError(file, "%s", err)
	}
	docs := splitDocs(data)
	var objs Objects
	var all []*FieldError
	seen := map[string]int{} // kind + full name or UID -> doc number
	for i, d := range docs {
		e := objs.decodeDoc(file, d, i+1, seen)
		if len(docs) > 1 {
			for _, fe := range e {
				fe.Doc = i + 1
			}
		}
		all = append(all, e...)
	}
	if err := finish(file, all); err != nil {
		return Objects{}, err
	}
	return objs, nil
}

// decodeDoc decodes one document of any supported kind into objs.
func (o *Objects) decodeDoc(file string, d doc, docNum int, seen map[string]int) errs {
	obj, e := parseObject(d)
	if len(e) > 0 {
		return e
	}
	if e = checkKind(obj); len(e) > 0 {
		return e
	}
	kind, _ := obj["kind"].(string)
	if isServiceKind(kind) {
		return o.decodeServiceDoc(kind, file, obj, docNum, seen)
	}
	switch kind {
	case KindConfigMap:
		cm, e := decodeConfigMap(obj)
		if cm != nil {
			e = append(e, checkUniqueData(KindConfigMap, cm.Namespace+"/"+cm.Name, docNum, seen)...)
			setSource(&cm.ObjectMeta, file)
			o.ConfigMaps = append(o.ConfigMaps, cm)
		}
		return e
	case KindSecret:
		sec, e := decodeSecret(obj)
		if sec != nil {
			e = append(e, checkUniqueData(KindSecret, sec.Namespace+"/"+sec.Name, docNum, seen)...)
			setSource(&sec.ObjectMeta, file)
			o.Secrets = append(o.Secrets, sec)
		}
		return e
	}
	if kind, _ := obj["kind"].(string); isWorkloadKind(kind) {
		return o.addWorkload(file, kind, obj, docNum, seen)
	}
	if IsIgnoredKind(kind) {
		return o.addIgnored(file, kind, obj, docNum, seen)
	}
	pod, e := decodePodObject(file, obj)
	if pod != nil {
		e = append(e, checkUnique(pod, docNum, seen)...)
		o.Pods = append(o.Pods, pod)
	}
	return e
}

// checkUnique rejects a pod whose full name or UID an earlier document of
// the same file already uses (pods are keyed by UID downstream).
func checkUnique(pod *corev1.Pod, docNum int, seen map[string]int) errs {
	var e errs
	if first, dup := seen[FullName(pod)]; dup {
		e.add("metadata.name", "Duplicate value: %q: also defined in document %d of this file", FullName(pod), first)
		return e
	}
	seen[FullName(pod)] = docNum
	if pod.UID == "" { // no metadata.uid and validation failed: none derived
		return e
	}
	if first, dup := seen["uid:"+string(pod.UID)]; dup {
		e.add("metadata.uid", "Duplicate value: %q: also used by document %d of this file", pod.UID, first)
	} else {
		seen["uid:"+string(pod.UID)] = docNum
	}
	return e
}

// setSource records the file a ConfigMap or Secret comes from (the
// config-source annotation, as on pods).
func setSource(m *metav1.ObjectMeta, file string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[wellknown.AnnotationConfigSource] = file
}

// parseObject parses one document into a generic object.
func parseObject(d doc) (map[string]any, errs) {
	v, e := parseDoc(d.raw, d.line, d.budget)
	if len(e) > 0 {
		return nil, e
	}
	obj, ok := v.(map[string]any)
	if !ok && v != nil {
		e.add("", "document is %s, not a Pod object (a YAML mapping or JSON object)", kindOf(v))
		return nil, e
	}
	return obj, nil
}

// decodePodObject decodes one Pod object into a defaulted, validated pod. The pod
// is returned (for duplicate detection) even when validation failed, but
// not when it could not be decoded.
func decodePodObject(file string, obj map[string]any) (*corev1.Pod, errs) {
	var e errs
	if checkSchema(obj, podType, nil, &e); len(e) > 0 {
		return nil, e
	}
	canon, err := canonicalJSON(obj)
	if err != nil {
		e.add("", "%s", err)
		return nil, e
	}
	pod := &corev1.Pod{}
	if err := strictUnmarshal(canon, pod); err != nil { // checkSchema should have caught it; this is a net
		e.add("", "decode Pod: %s", err)
		return nil, e
	}
	hash := hashCanonical(canon)
	cleanServerFields(pod)
	setDefaults(pod)
	if e = validatePod(pod); len(e) > 0 {
		return pod, e
	}
	identity, err := identityOf(obj)
	if err != nil {
		e.add("", "%s", err)
		return nil, e
	}
	if pod.UID == "" {
		pod.UID = PodUID(pod.Namespace, pod.Name, identity)
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[wellknown.AnnotationConfigHash] = hash
	pod.Annotations[wellknown.AnnotationIdentityHash] = identity
	pod.Annotations[wellknown.AnnotationConfigSource] = file
	return pod, nil
}

// strictUnmarshal decodes canonical JSON into v, refusing unknown fields.
func strictUnmarshal(canon []byte, v any) error {
	strict, err := sigsjson.UnmarshalStrict(canon, v, sigsjson.DisallowUnknownFields)
	if err == nil && len(strict) > 0 {
		err = errors.Join(strict...)
	}
	return err
}

// checkKind requires apiVersion v1 and kind Pod, ConfigMap or Secret.
func checkKind(obj map[string]any) errs {
	var e errs
	kind, _ := obj["kind"].(string)
	switch {
	case obj["kind"] == nil:
		e.add("kind", "Required value: this must be a Pod, ConfigMap or Secret (apiVersion: v1)")
	case kind == "":
		e.add("kind", "Invalid value: %s: expected the string \"Pod\", \"ConfigMap\" or \"Secret\"", describe(obj["kind"]))
	case kind != "Pod" && kind != KindConfigMap && kind != KindSecret && !isServiceKind(kind) && !isWorkloadKind(kind) && !IsIgnoredKind(kind):
		e.add("kind", "Unsupported value: %q: not supported by podhost %s", short(kind), unsupportedKindReason(kind))
	}
	if len(e) > 0 || isWorkloadKind(kind) || IsIgnoredKind(kind) {
		return e
	}
	switch version, _ := obj["apiVersion"].(string); {
	case obj["apiVersion"] == nil:
		e.add("apiVersion", "Required value: must be \"v1\" for a %s", kind)
	case version != "v1":
		e.add("apiVersion", "Unsupported value: %s: supported values: \"v1\"", describe(obj["apiVersion"]))
	}
	return e
}

// cleanServerFields drops what a server sets and a desired pod must not
// carry, so pasting `kubectl get pod -o yaml` output works: the status.
// It still counts in the spec hash (it covers the document as written).
// Managed fields stay: the kube API's server-side apply keeps them in the
// document (a mutable path: an edit of them restarts nothing).
func cleanServerFields(pod *corev1.Pod) {
	pod.Status = corev1.PodStatus{}
}

// ReadFile reads a manifest file (ReadBytes) and decodes it (see Decode).
// I/O errors are returned wrapped; file and decoding errors are an ErrorList.
func ReadFile(path string) ([]*corev1.Pod, error) {
	data, _, err := ReadBytes(path)
	if err != nil {
		return nil, err
	}
	return Decode(path, data)
}

// ReadBytes is the one safe reader of manifest files (the source, the CLI
// and ReadFile use it): it opens path without blocking (a FIFO named
// *.yaml must not hang anyone), refuses what is not a regular file or is
// larger than MaxFileSize — checked on the opened file, so a swap after a
// Stat cannot slip through — and reads at most MaxFileSize bytes even if
// the file grows meanwhile. It returns the opened file's info (owner and
// mode checks are the caller's). Refusals are an ErrorList naming path.
func ReadBytes(path string) ([]byte, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("read manifest: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("read manifest: %w", err)
	}
	if err := checkFileInfo(path, st); err != nil {
		return nil, st, err
	}
	data, err := ReadLimited(f, path, st.Size())
	return data, st, err
}

// ReadLimited reads a manifest from r (a file, or stdin with size -1): at
// most MaxFileSize bytes, else an ErrorList naming name.
func ReadLimited(r io.Reader, name string, size int64) ([]byte, error) {
	tooBig := func(n int64) error {
		what := fmt.Sprintf("%d bytes", n)
		if n < 0 {
			what = "larger than that"
		}
		return fileError(name, "file is %s, more than the %d-byte limit for a manifest", what, MaxFileSize)
	}
	if size > MaxFileSize {
		return nil, tooBig(size)
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", name, err)
	}
	if len(data) > MaxFileSize {
		return nil, tooBig(size)
	}
	return data, nil
}

func checkFileInfo(path string, st os.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fileError(path, "not a regular file (mode %s)", st.Mode().Type())
	}
	return nil
}
