package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/host/sandbox"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/services/kubeapi/stream"
)

// podSandboxes reads a pod's sandbox records (*state.DB).
type podSandboxes interface {
	PodSandboxes(uid types.UID) ([]records.SandboxRecord, error)
}

// StreamRuntime is stream.Runtime over podhost: exec through containerd,
// attach as a follow of the container's log, port-forward dialled in the
// pod's network namespace. The daemon's: backend.StreamRuntime.
type StreamRuntime struct {
	Runtime   execer       // *runtime.Runtime
	Consoles  consoles     // *runtime.Runtime: attach's terminal size
	stdin     stdinWriters // attach's writers of containers' stdin FIFOs
	Sandboxes podSandboxes // *state.DB
	LogDir    string       // the CRI log files' root (config logDir)
	// Pod returns the pod as the API shows it now: an attach follows the
	// log while the container's attempt it started with runs.
	Pod func(namespace, name string) (*corev1.Pod, error)
}

// StreamRuntime is what the Kubernetes API's exec, attach and port-forward
// run on: stream.New(b.StreamRuntime(), log, stream.Options{}).
func (b *backend) StreamRuntime() *StreamRuntime {
	sr := &StreamRuntime{Runtime: b.rt, Sandboxes: b.sandboxes, LogDir: b.logDir, Pod: b.find}
	if c, ok := b.rt.(consoles); ok {
		sr.Consoles = c
	}
	return sr
}

var _ stream.Runtime = (*StreamRuntime)(nil)

// Exec runs cmd in the container's task as containerd's CRI exec does
// (runtime.ExecWith: TTY with TERM=xterm and resizes). The process is
// killed when ctx ends: when the client's connection does, as podhost's
// own exec.
func (s *StreamRuntime) Exec(ctx context.Context, pod *corev1.Pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan stream.TerminalSize) (int, error) {
	id, err := runningContainerID(pod, container)
	if err != nil {
		return -1, err
	}
	o := runtime.ExecOptions{Stdin: stdin, TTY: tty, Resize: resize}
	if stdout != nil {
		o.Stdout = stdout
	}
	if stderr != nil {
		o.Stderr = stderr
	}
	return s.Runtime.ExecWith(ctx, id, cmd, o)
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// PortForward dials the port in the pod's network namespace (the host's
// for hostNetwork pods) and copies both ways (forward).
func (s *StreamRuntime) PortForward(ctx context.Context, pod *corev1.Pod, port int32, st io.ReadWriteCloser) error {
	defer st.Close()
	netns := ""
	if !pod.Spec.HostNetwork {
		rec, err := s.sandbox(pod)
		if err != nil {
			return err
		}
		netns = rec.NetNS
	}
	conn, err := sandbox.DialPort(ctx, netns, port)
	if err != nil {
		return err
	}
	return forward(ctx, conn, st)
}

// sandbox is the pod's newest Ready sandbox whose network namespace is
// still pinned (the syncer's currentSandbox).
func (s *StreamRuntime) sandbox(pod *corev1.Pod) (records.SandboxRecord, error) {
	recs, err := s.Sandboxes.PodSandboxes(pod.UID)
	if err != nil {
		return records.SandboxRecord{}, fmt.Errorf("pod %s/%s: sandbox records: %w", pod.Namespace, pod.Name, err)
	}
	var best records.SandboxRecord
	for _, r := range recs {
		if r.State == records.SandboxReady && r.NetNS != "" && (best.ID == "" || r.CreatedAt.After(best.CreatedAt)) {
			best = r
		}
	}
	if best.ID == "" || !sandbox.Exists(best.NetNS) {
		return records.SandboxRecord{}, fmt.Errorf("pod %s/%s: sandbox is not running", pod.Namespace, pod.Name)
	}
	return best, nil
}

// forward copies between the client's stream and the pod's connection
// until the pod's side ends: the client's end of input is passed on as a
// half-close (CloseWrite), so a server answering after it still can. ctx
// ending closes both. Errors from the connections being closed are not
// errors: any error reaches the client, and kubectl ends the whole
// port-forward on one.
func forward(ctx context.Context, conn net.Conn, st io.ReadWriteCloser) error {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close(); st.Close() })
	defer stop()
	in := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, st)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok && err == nil {
			err = cw.CloseWrite()
		}
		in <- err
	}()
	_, err := io.Copy(st, conn)
	st.Close()
	if err == nil {
		err = <-in // the pod is done: wait for the client's side (its stream ends with the session)
	}
	if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
