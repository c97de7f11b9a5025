package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/manifestdir"
)

// kubeStore writes the kube API's pods, ConfigMaps and Secrets through the
// manifest dir, as `podhost apply` and `podhost delete` do: the files stay
// the source of truth, and what the API created is a file a human reads.
type kubeStore struct {
	dir   string
	opts  manifestdir.Options
	grace func(namespace, name string, seconds int64) // a delete's grace period, before the file goes
}

func (d *daemon) kubeStore(b *backend) kubeStore {
	g := graces{d: d, b: b}
	return kubeStore{dir: d.cfg.ManifestDir, opts: manifestdir.Options{AllowInsecure: d.cfg.AllowInsecureManifests, PodSecurity: d.dirPolicy},
		grace: func(namespace, name string, seconds int64) { g.SetDeletionGrace(namespace, name, seconds) }}
}

// graces takes the grace period of a delete about to remove a pod's
// document (the kube API's DELETE, `podhost delete --grace-period`).
type graces struct {
	d *daemon
	b *backend
}

// SetDeletionGrace: false when no such pod runs (or it is terminating).
func (g graces) SetDeletionGrace(namespace, name string, seconds int64) bool {
	found := false
	for _, p := range g.b.Pods() {
		if p.Namespace == namespace && p.Name == name && p.DeletionTimestamp == nil {
			g.d.mgr.SetDeletionGrace(p.UID, seconds)
			found = true
		}
	}
	return found
}

// apiFile names documents the API writes in errors (Invalid's messages).
const apiFile = "request"

func kindOf(gr schema.GroupResource) manifestdir.Kind {
	switch gr.Resource {
	case "pods":
		return manifestdir.Pod
	case "configmaps":
		return manifestdir.ConfigMap
	}
	return manifestdir.Secret
}

// Stored is the object's document as a file holds it, as JSON.
func (s kubeStore) Stored(gr schema.GroupResource, namespace, name string) ([]byte, error) {
	obj, _, err := manifestdir.Lookup(s.dir, manifestdir.Ref{Kind: kindOf(gr), Namespace: namespace, Name: name}, s.opts)
	if errors.Is(err, manifestdir.ErrNotFound) {
		return nil, apierrors.NewNotFound(gr, name)
	}
	if err != nil {
		return nil, err
	}
	return yaml.YAMLToJSON(obj.Doc)
}

// Put decodes doc as the daemon's source will, then writes it as YAML
// (a .json file keeps JSON) into the file that declares the object, or a
// new one.
func (s kubeStore) Put(ctx context.Context, gr schema.GroupResource, namespace, name string, doc []byte, create, dryRun bool) (runtime.Object, bool, error) {
	y, err := yaml.JSONToYAML(doc)
	if err != nil {
		return nil, false, apierrors.NewBadRequest(err.Error())
	}
	obj, err := manifestdir.Decode(apiFile, y)
	if err != nil {
		return nil, false, invalid(gr, name, err)
	}
	if obj.Kind != kindOf(gr) || obj.Namespace != namespace || obj.Name != name {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("the object is %s %s/%s, the request names %s %s/%s",
			obj.Kind, obj.Namespace, obj.Name, kindOf(gr), namespace, name))
	}
	opts := s.opts
	opts.DryRun, opts.Mode = dryRun, manifestdir.ReplaceOnly
	if create {
		opts.Mode = manifestdir.CreateOnly
	}
	rs, err := manifestdir.Apply(ctx, s.dir, []manifestdir.Object{obj}, opts)
	switch {
	case errors.Is(err, manifestdir.ErrExists):
		return nil, false, apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, manifestdir.ErrNotFound):
		return nil, false, apierrors.NewNotFound(gr, name)
	case err != nil:
		return nil, false, invalid(gr, name, err)
	}
	written := len(rs) == 1 && rs[0].Written
	switch {
	case obj.Pod != nil:
		return obj.Pod, written, nil
	case obj.ConfigMap != nil:
		return obj.ConfigMap, written, nil
	}
	return obj.Secret, written, nil
}

// invalid is a decoder's or planner's error as the API server's Invalid:
// one cause per field error.
func invalid(gr schema.GroupResource, name string, err error) error {
	var list manifest.ErrorList
	if !errors.As(err, &list) {
		return apierrors.NewBadRequest(strings.ReplaceAll(err.Error(), apiFile+": ", ""))
	}
	var errs field.ErrorList
	for _, fe := range list {
		errs = append(errs, &field.Error{Type: field.ErrorTypeInvalid, Field: fe.Field, BadValue: field.OmitValueType{}, Detail: fe.Detail})
	}
	kind := map[string]string{"pods": "Pod", "configmaps": "ConfigMap", "secrets": "Secret"}[gr.Resource]
	return apierrors.NewInvalid(schema.GroupKind{Kind: kind}, name, errs)
}

// Delete removes the document declaring the object; for a pod, the grace
// period asked for first reaches the pod's termination.
func (s kubeStore) Delete(ctx context.Context, gr schema.GroupResource, namespace, name string, grace *int64, dryRun bool) error {
	if grace != nil && gr.Resource == "pods" && !dryRun {
		s.grace(namespace, name, *grace)
	}
	opts := s.opts
	opts.DryRun = dryRun
	rs, err := manifestdir.Delete(ctx, s.dir, []manifestdir.Ref{{Kind: kindOf(gr), Namespace: namespace, Name: name}}, opts)
	if err != nil {
		return err
	}
	if len(rs) != 1 || rs[0].File == "" {
		return apierrors.NewNotFound(gr, name)
	}
	return nil
}
