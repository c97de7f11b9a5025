package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/rest"
)

// The stubs give the generic API server's installer exactly the method sets
// of the served verbs; it derives the routes, and so the OpenAPI documents,
// from the interfaces a storage implements. They are never called.

var errStub = errors.New("kapigen: a stub storage was called")

// base: what every storage has.
type base struct {
	r      *resource
	scheme *runtime.Scheme
}

func (b base) new(kind string) runtime.Object {
	gv := b.r.gv
	if !b.r.kindGV.Empty() {
		gv = b.r.kindGV
	}
	o, err := b.scheme.New(gv.WithKind(kind))
	if err != nil {
		panic(fmt.Sprintf("kapigen: %s %s: %v", b.r.gv, b.r.name, err))
	}
	return o
}

func (b base) New() runtime.Object              { return b.new(b.r.kind) }
func (b base) Destroy()                         {}
func (b base) NamespaceScoped() bool            { return b.r.namespaced }
func (b base) GetSingularName() string          { return strings.ToLower(b.r.kind) }
func (b base) NewList() runtime.Object          { return b.new(b.r.list) }
func (b base) DeleteReturnsDeletedObject() bool { return b.r.deleteReturnsObject }

type getter struct{}

func (getter) Get(context.Context, string, *metav1.GetOptions) (runtime.Object, error) {
	return nil, errStub
}

type lister struct{}

func (lister) List(context.Context, *metainternalversion.ListOptions) (runtime.Object, error) {
	return nil, errStub
}

func (lister) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, errStub
}

type watcher struct{}

func (watcher) Watch(context.Context, *metainternalversion.ListOptions) (watch.Interface, error) {
	return nil, errStub
}

type creater struct{}

func (creater) Create(context.Context, runtime.Object, rest.ValidateObjectFunc, *metav1.CreateOptions) (runtime.Object, error) {
	return nil, errStub
}

// updater: with getter, the generic server also serves patch.
type updater struct{}

func (updater) Update(context.Context, string, rest.UpdatedObjectInfo, rest.ValidateObjectFunc, rest.ValidateObjectUpdateFunc, bool, *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return nil, false, errStub
}

type deleter struct{}

func (deleter) Delete(context.Context, string, rest.ValidateObjectFunc, *metav1.DeleteOptions) (runtime.Object, bool, error) {
	return nil, false, errStub
}

type collectionDeleter struct{}

func (collectionDeleter) DeleteCollection(context.Context, rest.ValidateObjectFunc, *metav1.DeleteOptions, *metainternalversion.ListOptions) (runtime.Object, error) {
	return nil, errStub
}

// The plain shapes, by verb set.
type (
	storeAll struct {
		base
		getter
		lister
		watcher
		creater
		updater
		deleter
		collectionDeleter
	}
	storeAllButCollection struct {
		base
		getter
		lister
		watcher
		creater
		updater
		deleter
	}
	storeRead struct {
		base
		getter
		lister
		watcher
	}
	storeGetList struct {
		base
		getter
		lister
	}
	storeGetUpdate struct {
		base
		getter
		updater
	}
	storeGet struct {
		base
		getter
	}
	storeCreate struct {
		base
		creater
	}
)

// connectStore: exec, attach, portforward (kube's ExecREST and the like).
type connectStore struct{ base }

func (connectStore) ConnectMethods() []string { return []string{"GET", "POST"} }
func (s connectStore) NewConnectOptions() (runtime.Object, bool, string) {
	return s.New(), false, ""
}
func (connectStore) Connect(context.Context, string, runtime.Object, rest.Responder) (http.Handler, error) {
	return nil, errStub
}

// optionsStore: pods/log (kube's LogREST): a get with a query object,
// answering text/plain.
type optionsStore struct{ base }

func (optionsStore) Get(context.Context, string, runtime.Object) (runtime.Object, error) {
	return nil, errStub
}
func (s optionsStore) NewGetOptions() (runtime.Object, bool, string) {
	return s.new(s.r.options), false, ""
}
func (optionsStore) ProducesMIMETypes(string) []string { return []string{"text/plain"} }
func (optionsStore) ProducesObject(string) any         { return "" }

// namedStore: pods/eviction (kube's EvictionREST): a create on the named
// parent, of a kind of another group.
type namedStore struct{ base }

func (namedStore) Create(context.Context, string, runtime.Object, rest.ValidateObjectFunc, *metav1.CreateOptions) (runtime.Object, error) {
	return nil, errStub
}
func (s namedStore) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return s.r.kindGV.WithKind(s.r.kind)
}

// storage is r's stub.
func storage(r *resource, scheme *runtime.Scheme) (rest.Storage, error) {
	b := base{r: r, scheme: scheme}
	switch r.shape {
	case connect:
		return connectStore{b}, nil
	case options:
		return optionsStore{b}, nil
	case named:
		return namedStore{b}, nil
	}
	v := slices.Clone(r.verbs)
	slices.Sort(v)
	switch strings.Join(v, " ") {
	case "create delete deletecollection get list patch update watch":
		return storeAll{base: b}, nil
	case "create delete get list patch update watch":
		return storeAllButCollection{base: b}, nil
	case "get list watch":
		return storeRead{base: b}, nil
	case "get list":
		return storeGetList{base: b}, nil
	case "get patch update":
		return storeGetUpdate{base: b}, nil
	case "get":
		return storeGet{base: b}, nil
	case "create":
		return storeCreate{base: b}, nil
	}
	return nil, fmt.Errorf("%s %s: no stub serves the verbs %v: add one to stubs.go", r.gv, r.name, r.verbs)
}
