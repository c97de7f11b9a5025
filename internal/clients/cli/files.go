package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/desired/configdata"
	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// manifestMode is the mode of files podhost writes into the manifest dir.
const manifestMode = 0o644

// locatedObject is where an object currently lives in the manifest dir.
type locatedObject struct {
	obj  object
	file string
}

// indexObjects maps object key → location for every object of a snapshot.
func indexObjects(snap source.Snapshot) map[string]locatedObject {
	idx := map[string]locatedObject{}
	for _, p := range snap.Pods {
		idx[manifest.FullName(p)] = locatedObject{file: p.Annotations[wellknown.AnnotationConfigSource],
			obj: object{kind: "pod", key: manifest.FullName(p), hash: manifest.Hash(p), same: podAsRun(p), pod: p}}
	}
	for _, cm := range snap.ConfigMaps {
		k := "configmap:" + cm.Namespace + "/" + cm.Name
		idx[k] = locatedObject{file: cm.Annotations[wellknown.AnnotationConfigSource],
			obj: object{kind: "configmap", key: k, hash: metaHash(cm.ObjectMeta) + configdata.DataHash(cm), immutable: cm.Immutable != nil && *cm.Immutable}}
	}
	for _, sec := range snap.Secrets {
		k := "secret:" + sec.Namespace + "/" + sec.Name
		idx[k] = locatedObject{file: sec.Annotations[wellknown.AnnotationConfigSource],
			obj: object{kind: "secret", key: k, hash: metaHash(sec.ObjectMeta) + configdata.DataHash(sec), immutable: sec.Immutable != nil && *sec.Immutable}}
	}
	return idx
}

// isJSON reports whether a document is JSON (starts with '{').
func isJSON(doc []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(doc, " \t\r\n"), []byte("{"))
}

// withNewline returns doc ending in exactly one newline.
func withNewline(doc []byte) []byte {
	doc = bytes.TrimRight(doc, " \t\r\n")
	return append(doc[:len(doc):len(doc)], '\n')
}

// asJSON converts a YAML document to indented JSON (for .json files).
func asJSON(doc []byte) ([]byte, error) {
	if isJSON(doc) {
		return withNewline(doc), nil
	}
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, j, "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// joinDocs joins documents into file content, separated by "---".
func joinDocs(docs [][]byte) []byte {
	var buf bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(withNewline(d))
	}
	return buf.Bytes()
}

func isJSONFile(path string) bool { return strings.EqualFold(filepath.Ext(path), ".json") }

// fileDocs reads a manifest file and returns its documents with the key of
// the object each one declares (same index; see objectKey).
func fileDocs(path string) ([][]byte, []string, error) {
	data, _, err := manifest.ReadBytes(path)
	if err != nil {
		return nil, nil, err
	}
	docs, err := manifest.Docs(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if _, err := manifest.DecodeObjects(path, data); err != nil {
		return nil, nil, err
	}
	keys := make([]string, len(docs))
	for i, d := range docs {
		objs, err := docObjects(path, d)
		if err != nil {
			return nil, nil, err
		}
		keys[i] = objs[0].key
	}
	return docs, keys, nil
}

// object is one object of a manifest: a Pod, ConfigMap or Secret.
type object struct {
	kind, namespace, name string
	key                   string // pods: "ns/name" (manifest.FullName); others "kind:ns/name"
	hash                  string // content, for unchanged detection
	same                  string // pods: what podhost runs (podAsRun); equal = unchanged too
	pod                   *corev1.Pod
	immutable             bool
}

// docObjects decodes one document (already validated as part of its file)
// into its object.
func docObjects(name string, doc []byte) ([]object, error) {
	objs, err := manifest.DecodeObjects(name, doc)
	if err != nil {
		return nil, err
	}
	var out []object
	for _, p := range objs.Pods {
		out = append(out, object{kind: "pod", namespace: p.Namespace, name: p.Name, key: manifest.FullName(p), hash: manifest.Hash(p), same: podAsRun(p), pod: p})
	}
	for _, cm := range objs.ConfigMaps {
		out = append(out, object{kind: "configmap", namespace: cm.Namespace, name: cm.Name, key: "configmap:" + cm.Namespace + "/" + cm.Name,
			hash: metaHash(cm.ObjectMeta) + configdata.DataHash(cm), immutable: cm.Immutable != nil && *cm.Immutable})
	}
	for _, sec := range objs.Secrets {
		out = append(out, object{kind: "secret", namespace: sec.Namespace, name: sec.Name, key: "secret:" + sec.Namespace + "/" + sec.Name,
			hash: metaHash(sec.ObjectMeta) + configdata.DataHash(sec), immutable: sec.Immutable != nil && *sec.Immutable})
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("%s: internal error: a document holds %d objects", filepath.Base(name), len(out))
	}
	return out, nil
}

// podAsRun is the pod as podhost runs it, defaulted, without what
// `get -o yaml` adds to a manifest (status, podhost's annotations, the
// node name): applying that output again changes nothing, as with
// kubectl, instead of rewriting every file (which restarts the pods).
func podAsRun(p *corev1.Pod) string {
	c := p.DeepCopy()
	c.Status = corev1.PodStatus{}
	c.Spec.NodeName = ""
	for _, a := range manifest.PodhostAnnotations {
		delete(c.Annotations, a)
	}
	if len(c.Annotations) == 0 {
		c.Annotations = nil
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// metaHash covers the labels and annotations of a ConfigMap or Secret
// (podhost's config-source annotation excluded).
func metaHash(m metav1.ObjectMeta) string {
	ann := maps.Clone(m.Annotations)
	delete(ann, wellknown.AnnotationConfigSource)
	b, _ := json.Marshal([]any{m.Labels, ann})
	return string(b)
}

// modeFor is the mode of a manifest file podhost writes: 0600 when it holds
// a Secret (the source refuses world-readable Secret files), else 0644.
func modeFor(path string, data []byte) os.FileMode {
	if objs, err := manifest.DecodeObjects(path, data); err == nil && len(objs.Secrets) > 0 {
		return 0o600
	}
	return manifestMode
}

// writeAtomic replaces path with data: a dotfile temp in the same dir (the
// source ignores it), mode 0644 (root-owned when running as root), fsync,
// rename, fsync of the dir. If path is a symlink its target is replaced,
// so the link stays.
func writeAtomic(path string, data []byte) (err error) {
	if resolved, rerr := filepath.EvalSymlinks(path); rerr == nil {
		path = resolved
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".podhost-*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Chmod(modeFor(path, data)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if os.Geteuid() == 0 {
		if err = f.Chown(0, 0); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(dir)
}

// ensureDir creates the manifest dir (0755) if it is missing.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("manifest dir: %w", err)
	}
	return nil
}

// lockDir takes an exclusive flock on dir, so that concurrent apply and
// delete runs serialize their read-modify-write of the manifest dir. A
// missing dir is not locked (nothing to protect yet).
func lockDir(ctx context.Context, dir string) (unlock func(), err error) {
	d, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("manifest dir: %w", err)
	}
	for {
		err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { d.Close() }, nil // close releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			d.Close()
			return nil, fmt.Errorf("lock manifest dir: %w", err)
		}
		select {
		case <-ctx.Done():
			d.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// removeFile removes path (a symlink itself, not its target) and syncs the dir.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// newFileName picks the file name for a new pod: "<name><ext>" in the default
// namespace, else "<namespace>_<name><ext>"; on a clash with any existing
// entry (or one planned in this run) the namespaced form, then "-2", "-3"...
func newFileName(pod *corev1.Pod, ext string, taken map[string]bool) string {
	return fileNameFor(pod.Namespace, pod.Name, ext, taken)
}

// newObjectFileName is newFileName for any object: a ConfigMap or Secret
// gets its kind before the extension ("app.configmap.yaml").
func newObjectFileName(o object, ext string, taken map[string]bool) string {
	if o.pod != nil {
		return newFileName(o.pod, ext, taken)
	}
	return fileNameFor(o.namespace, o.name, "."+o.kind+ext, taken)
}

func fileNameFor(namespace, name, ext string, taken map[string]bool) string {
	var cands []string
	if namespace == "" || namespace == "default" {
		cands = append(cands, name+ext)
	}
	base := namespace + "_" + name
	cands = append(cands, base+ext)
	for _, c := range cands {
		if !taken[c] {
			return c
		}
	}
	for i := 2; ; i++ {
		if c := fmt.Sprintf("%s-%d%s", base, i, ext); !taken[c] {
			return c
		}
	}
}

// dirNames returns the set of entry names in dir (empty when missing).
func dirNames(dir string) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("manifest dir: %w", err)
	}
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names, nil
}
