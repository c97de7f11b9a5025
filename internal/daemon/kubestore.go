package daemon

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podhost/podhost/internal/services/kubeapi"
)

// kubeStore writes the kube API's objects through the manifest dir.
type kubeStore struct{ dir string }

func (d *daemon) kubeStore() kubeapi.Store { return kubeStore{dir: d.cfg.ManifestDir} }

func (s kubeStore) Stored(gr schema.GroupResource, namespace, name string) ([]byte, error) {
	return nil, apierrors.NewNotFound(gr, name)
}

func (s kubeStore) Put(ctx context.Context, gr schema.GroupResource, namespace, name string, doc []byte, create, dryRun bool) (runtime.Object, error) {
	return nil, apierrors.NewMethodNotSupported(gr, "write")
}

func (s kubeStore) Delete(ctx context.Context, gr schema.GroupResource, namespace, name string, grace *int64, dryRun bool) error {
	return apierrors.NewMethodNotSupported(gr, "delete")
}
