package kubeapi

import (
	"fmt"
	"net/http"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

type handlerFunc func(http.ResponseWriter, *http.Request, *requestInfo)

// subresourceHandler is the handler of a request that is not a plain
// read or write of objects: a subresource, metrics, access reviews.
func (s *Server) subresourceHandler(ri *requestInfo) handlerFunc {
	switch {
	case ri.gv == metricsGV:
		return s.metrics
	case ri.gv == authzGV:
		return s.review
	case ri.subresource == "":
		return nil
	case ri.subresource == "status", ri.subresource == "ephemeralcontainers":
		return s.get
	case ri.subresource == "log":
		return s.podLog
	case ri.subresource == "exec", ri.subresource == "attach", ri.subresource == "portforward":
		return s.stream
	case ri.subresource == "eviction":
		return s.evict
	}
	return func(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
		writeError(w, r, notFoundPath(r.URL.Path))
	}
}

// pod is the request's pod (synced now).
func (s *Server) pod(ri *requestInfo) (*corev1.Pod, error) {
	obj, _, err := s.find(&requestInfo{gv: coreGV, resource: lookup(coreGV, "pods"), namespace: ri.namespace, name: ri.name})
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

// podLog streams a container's log, the kubelet's PodLogOptions semantics
// (follow, previous, tailLines, sinceSeconds, sinceTime, timestamps,
// limitBytes; container defaulted as the API server does when the pod has
// one container).
func (s *Server) podLog(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	var opts corev1.PodLogOptions
	if err := paramCodec.DecodeParameters(r.URL.Query(), coreGV, &opts); err != nil {
		writeError(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	p, err := s.pod(ri)
	if err == nil && opts.Container == "" {
		opts.Container, err = onlyContainer(p)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	out := &limitWriter{w: w, rc: http.NewResponseController(w), left: -1}
	if opts.LimitBytes != nil {
		out.left = *opts.LimitBytes
	}
	if err := s.b.Logs(r.Context(), p, &opts, out); err != nil && !out.wrote && err != errLimit {
		writeError(w, r, err)
	}
}

// onlyContainer is the pod's container when it has one; else the API
// server's error (kubectl picks the default container itself).
func onlyContainer(p *corev1.Pod) (string, error) {
	if len(p.Spec.Containers) == 1 {
		return p.Spec.Containers[0].Name, nil
	}
	var names []string
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", p.Name, strings.Join(names, " ")))
}

var errLimit = fmt.Errorf("limitBytes reached")

// limitWriter flushes every write (a followed log is live) and stops at
// limitBytes.
type limitWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	left  int64 // -1: no limit
	wrote bool
}

func (l *limitWriter) Write(b []byte) (int, error) {
	if l.left == 0 {
		return 0, errLimit
	}
	n := len(b)
	if l.left > 0 && int64(n) > l.left {
		b = b[:l.left]
	}
	m, err := l.w.Write(b)
	l.wrote = l.wrote || m > 0
	if l.left > 0 {
		l.left -= int64(m)
	}
	if err == nil {
		err = l.rc.Flush()
	}
	if err == nil && m < n {
		err = errLimit
	}
	return m, err
}

// stream serves exec, attach and port-forward through Streams, after the
// checks the API server and kubectl make: the pod is running, the
// container exists.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	if s.streams == nil {
		writeError(w, r, apierrors.NewServiceUnavailable("streaming is not available"))
		return
	}
	p, err := s.pod(ri)
	if err == nil && p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
		err = apierrors.NewBadRequest(fmt.Sprintf("cannot %s into a container in a completed pod; current phase is %s", ri.subresource, p.Status.Phase))
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	switch ri.subresource {
	case "exec":
		var o corev1.PodExecOptions
		if err := paramCodec.DecodeParameters(q, coreGV, &o); err != nil {
			writeError(w, r, apierrors.NewBadRequest(err.Error()))
			return
		}
		if o.Container, err = containerOf(p, o.Container); err != nil {
			writeError(w, r, err)
			return
		}
		s.streams.Exec(w, r, p, &o)
	case "attach":
		var o corev1.PodAttachOptions
		if err := paramCodec.DecodeParameters(q, coreGV, &o); err != nil {
			writeError(w, r, apierrors.NewBadRequest(err.Error()))
			return
		}
		if o.Container, err = containerOf(p, o.Container); err != nil {
			writeError(w, r, err)
			return
		}
		s.streams.Attach(w, r, p, &o)
	default:
		var o corev1.PodPortForwardOptions
		if err := paramCodec.DecodeParameters(q, coreGV, &o); err != nil {
			writeError(w, r, apierrors.NewBadRequest(err.Error()))
			return
		}
		s.streams.PortForward(w, r, p, &o)
	}
}

// containerOf checks a named container (init, sidecar or app) or defaults
// to the only app container, as the API server does.
func containerOf(p *corev1.Pod, name string) (string, error) {
	if name == "" {
		return onlyContainer(p)
	}
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range cs {
			if c.Name == name {
				return name, nil
			}
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, p.Name))
}

// evict is the Eviction subresource (kubectl drain): a delete with the
// eviction's options. podhost has no PodDisruptionBudgets.
func (s *Server) evict(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var ev policyv1.Eviction
	if err := decodeBody(body, r.Header.Get("Content-Type"), policyv1.SchemeGroupVersion.WithKind("Eviction"), &ev); err != nil {
		writeError(w, r, err)
		return
	}
	var grace *int64
	if ev.DeleteOptions != nil {
		grace = ev.DeleteOptions.GracePeriodSeconds
	}
	if _, err := s.pod(ri); err != nil {
		writeError(w, r, err)
		return
	}
	if err := s.store.Delete(r.Context(), ri.groupResource(), ri.namespace, ri.name, grace, false); err != nil {
		writeError(w, r, err)
		return
	}
	writeObject(w, accept{mediaType: runtime.ContentTypeJSON}, http.StatusCreated, &metav1.Status{Status: metav1.StatusSuccess}, unversioned)
}

// review answers access reviews: whoever got through authentication is an
// administrator of the node (`kubectl auth can-i` says yes).
func (s *Server) review(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	body, err := readBody(r)
	if err != nil || ri.verb != "create" {
		writeError(w, r, apierrors.NewMethodNotSupported(ri.groupResource(), ri.verb))
		return
	}
	a, err := negotiate(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	a.table, a.partial = false, false
	var out runtime.Object
	ct := r.Header.Get("Content-Type")
	switch ri.resource.name {
	case "selfsubjectaccessreviews":
		var rv authorizationv1.SelfSubjectAccessReview
		err = decodeBody(body, ct, authzGV.WithKind("SelfSubjectAccessReview"), &rv)
		rv.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "podhost: an authenticated client is the node's administrator"}
		out = &rv
	default:
		var rv authorizationv1.SelfSubjectRulesReview
		err = decodeBody(body, ct, authzGV.WithKind("SelfSubjectRulesReview"), &rv)
		rv.Status = authorizationv1.SubjectRulesReviewStatus{
			ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
			NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}}
		out = &rv
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeObject(w, a, http.StatusCreated, out, authzGV)
}
