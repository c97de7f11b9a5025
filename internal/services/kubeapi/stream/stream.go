// Package stream serves the streaming subresources of the Kubernetes API
// — pods/exec, pods/attach, pods/portforward — for the real kubectl, with
// upstream's protocol code only.
//
// It is the kubelet's arrangement collapsed into one process: an
// in-process "CRI streaming server" (loopback.go: an http.Server on a
// net.Pipe listener) serves k8s.io/cri-streaming's remotecommand.ServeExec,
// ServeAttach and portforward.ServePortForward over the Runtime; the API
// side hands each request to it as kube-apiserver and the kubelet do
// (third_party/forked/apiserverproxy, apimachinery's UpgradeAwareHandler):
//
//	exec, attach:  WebSocket v5.channel.k8s.io → StreamTranslatorHandler → SPDY → loopback
//	               SPDY (and the legacy WebSocket protocols) → UpgradeAwareHandler → loopback
//	portforward:   WebSocket SPDY/3.1+portforward.k8s.io → TunnelingHandler → UpgradeAwareHandler → loopback
//	               SPDY → UpgradeAwareHandler → loopback
//
// A session (one exec, attach or port-forward connection) ends with the
// client's connection: its context, which the Runtime gets, is cancelled
// then (hangup.go), so an abandoned `kubectl exec` does not keep its
// process, and an attach stops following the log.
//
// Bounds on what a client controls: Options.MaxSessions concurrent
// sessions (429 beyond), maxForwards concurrent forwarded connections per
// port-forward session (more wait for a slot).
// Upstream bounds the rest: a WebSocket message is at most 32 MiB
// (x/net/websocket), a SPDY frame at most 16 MiB with at most 5×50 frames
// queued per connection while a stream is not read (moby/spdystream), a
// port-forward stream waits StreamCreationTimeout for its pair; a
// connection idle for IdleTimeout is closed. An attach drains the stdin
// it does not use, so it never stalls the connection.
package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// TerminalSize is a terminal's size in characters, as kubectl sends it
// for -t sessions.
type TerminalSize = runtimeapi.TerminalSize

// Runtime is what the streaming endpoints need from the daemon. The pod
// is resolved and validated by the caller (the API server); the container
// is named. The streams not asked for are nil; with tty, stderr is nil.
// ctx ends when the client's connection does (or the Server closes).
type Runtime interface {
	// Exec runs cmd in the container and returns its exit code.
	Exec(ctx context.Context, pod *corev1.Pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan TerminalSize) (exitCode int, err error)
	// Attach streams the container's output (and input) until it stops
	// or ctx ends. tty is the container's (spec) TTY, as the kubelet's.
	Attach(ctx context.Context, pod *corev1.Pod, container string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan TerminalSize) error
	// PortForward copies between stream and the pod's TCP port until
	// either side is done (or ctx ends), and closes stream.
	PortForward(ctx context.Context, pod *corev1.Pod, port int32, stream io.ReadWriteCloser) error
}

// Options tunes a Server; zero values are the defaults.
type Options struct {
	// IdleTimeout closes a streaming connection idle that long: the
	// kubelet's streamingConnectionIdleTimeout (4h).
	IdleTimeout time.Duration
	// StreamCreationTimeout bounds the wait for a session's streams (30s).
	StreamCreationTimeout time.Duration
	// MaxSessions bounds the sessions served at once (DefaultMaxSessions).
	MaxSessions int
}

// DefaultMaxSessions is Options.MaxSessions' default.
const DefaultMaxSessions = 64

// maxForwards bounds the connections one port-forward session forwards
// at once (a browser opens about six per host); more wait their turn.
const maxForwards = 128

// Server serves the streaming endpoints. Close it to end its sessions and
// its loopback server.
type Server struct {
	rt    Runtime
	log   *slog.Logger
	opts  Options
	slots chan struct{}
	loop  *loopback
	// maxForwards: a port-forward session's bound (tests lower it).
	maxForwards   int
	forwardQueued func() // test hook
}

// New returns a Server over rt.
func New(rt Runtime, log *slog.Logger, opts Options) *Server {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 4 * time.Hour
	}
	if opts.StreamCreationTimeout <= 0 {
		opts.StreamCreationTimeout = 30 * time.Second
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	s := &Server{rt: rt, log: log, opts: opts, slots: make(chan struct{}, opts.MaxSessions), maxForwards: maxForwards}
	s.loop = newLoopback(s)
	return s
}

// Close ends every session and the loopback server.
func (s *Server) Close() error { return s.loop.close() }

// Exec serves pods/{name}/exec (kubectl exec) for the container
// opts.Container of pod.
func (s *Server) Exec(w http.ResponseWriter, r *http.Request, pod *corev1.Pod, opts *corev1.PodExecOptions) {
	if len(opts.Command) == 0 {
		writeStatus(w, apierrors.NewBadRequest("you must specify at least one command for the container"))
		return
	}
	q, o, ok := streamQuery(w, opts.Stdin, opts.Stdout, opts.Stderr, opts.TTY)
	if !ok {
		return
	}
	s.serve(w, r, &session{kind: kindExec, pod: pod, container: opts.Container, cmd: opts.Command, opts: o}, q)
}

// Attach serves pods/{name}/attach (kubectl attach). As the kubelet's,
// the session's TTY is the container's (spec.containers[].tty), which
// kubectl matches.
func (s *Server) Attach(w http.ResponseWriter, r *http.Request, pod *corev1.Pod, opts *corev1.PodAttachOptions) {
	q, o, ok := streamQuery(w, opts.Stdin, opts.Stdout, opts.Stderr, opts.TTY)
	if !ok {
		return
	}
	q.Del(remotecommand.ExecTTYParam)
	if containerTTY(pod, opts.Container) {
		q.Set(remotecommand.ExecTTYParam, "1")
	}
	s.serve(w, r, &session{kind: kindAttach, pod: pod, container: opts.Container, opts: o}, q)
}

// PortForward serves pods/{name}/portforward (kubectl port-forward). The
// ports travel in the streams' headers; opts.Ports (may be nil) only
// serves the legacy WebSocket protocol, as the kubelet's port query.
func (s *Server) PortForward(w http.ResponseWriter, r *http.Request, pod *corev1.Pod, opts *corev1.PodPortForwardOptions) {
	q := url.Values{}
	if opts != nil {
		for _, p := range opts.Ports {
			q.Add(portforward.PortHeader, strconv.Itoa(int(p)))
		}
	}
	s.serve(w, r, &session{kind: kindPortForward, pod: pod, forwards: make(chan struct{}, s.maxForwards)}, q)
}

// writeStatus answers with a metav1.Status, as the API server does.
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	b, jerr := json.Marshal(st)
	if jerr != nil {
		b = []byte(fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,"message":%q}`, jerr.Error()))
	}
	if ra := st.Details; ra != nil && ra.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(ra.RetryAfterSeconds)))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(b)
}
