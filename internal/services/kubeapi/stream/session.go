package stream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiproxy "k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/podhost/podhost/third_party/forked/apiserverproxy"
)

const (
	kindExec        = "exec"
	kindAttach      = "attach"
	kindPortForward = "portforward"
)

// session is one streaming connection: what the loopback server's handler
// for it needs, found by the token in its URL.
type session struct {
	kind      string
	pod       *corev1.Pod
	container string
	cmd       []string
	// opts are the streams the client asked for (exec, attach): the
	// translator's; the loopback request carries the kubelet's query.
	opts *remotecommand.Options
	// ctx ends with the client's connection or the Server.
	ctx context.Context
	// forwards bounds a port-forward's concurrent connections.
	forwards chan struct{}
	stop     func() bool // unhooks ctx from the loopback's close
}

// streamQuery validates the streams asked for with the kubelet's rules
// (remotecommand.NewOptions: at least one; no stderr with a TTY) and
// returns them with the kubelet's query (input=1&output=1&error=1&tty=1).
// On error it answers 400 and returns false.
func streamQuery(w http.ResponseWriter, stdin, stdout, stderr, tty bool) (url.Values, *remotecommand.Options, bool) {
	q := url.Values{}
	for _, p := range []struct {
		on   bool
		name string
	}{{stdin, remotecommand.ExecStdinParam}, {stdout, remotecommand.ExecStdoutParam}, {stderr, remotecommand.ExecStderrParam}, {tty, remotecommand.ExecTTYParam}} {
		if p.on {
			q.Set(p.name, "1")
		}
	}
	o, err := remotecommand.NewOptions(&http.Request{Method: http.MethodGet, URL: &url.URL{RawQuery: q.Encode()}})
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return nil, nil, false
	}
	return q, o, true
}

// serve registers the session, hands the request to the upstream handler
// for its protocol, and returns when the session is over.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, sess *session, q url.Values) {
	if sess.kind != kindPortForward && sess.container == "" {
		writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", sess.pod.Name)))
		return
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		writeStatus(w, apierrors.NewTooManyRequests(fmt.Sprintf("too many streaming sessions (exec, attach, port-forward): %d at once", cap(s.slots)), 1))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sess.ctx = ctx
	token, ok := s.loop.register(sess, cancel)
	if !ok {
		writeStatus(w, apierrors.NewServiceUnavailable("the streaming server is shutting down"))
		return
	}
	defer s.loop.unregister(token)
	loc := &url.URL{Scheme: "http", Host: loopHost, Path: "/" + sess.kind + "/" + token, RawQuery: q.Encode()}
	start := time.Now()
	s.handler(sess, loc).ServeHTTP(&hangupWriter{ResponseWriter: w, hangup: cancel}, r.WithContext(ctx))
	s.log.Debug("stream session ended", "kind", sess.kind, "pod", sess.pod.Namespace+"/"+sess.pod.Name, "container", sess.container, "took", time.Since(start).Round(time.Millisecond))
}

// handler is the kube-apiserver's for the session's kind (its pod
// subresources' Connect): the upgrade-aware proxy to the loopback server,
// behind the v5 translator or the port-forward tunnel for WebSocket
// requests of those protocols.
func (s *Server) handler(sess *session, loc *url.URL) http.Handler {
	proxy := apiproxy.NewUpgradeAwareHandler(loc, s.loop.transport, false, true, s)
	if sess.kind == kindPortForward {
		return apiserverproxy.NewTranslatingHandler(proxy, apiserverproxy.NewTunnelingHandler(proxy), wsstream.IsWebSocketRequestWithTunnelingProtocol)
	}
	o := sess.opts
	translator := apiserverproxy.NewStreamTranslatorHandler(loc, s.loop.transport, 0, apiserverproxy.Options{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY})
	return apiserverproxy.NewTranslatingHandler(proxy, translator, wsstream.IsWebSocketRequestWithStreamCloseProtocol)
}

// Error answers a request the upgrade-aware proxy could not hand over
// (apiproxy.ErrorResponder).
func (s *Server) Error(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Debug("stream proxy error", "path", r.URL.Path, "err", err)
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		writeStatus(w, se)
		return
	}
	writeStatus(w, apierrors.NewInternalError(err))
}
