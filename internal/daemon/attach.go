package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/model/podview"
	"github.com/podhost/podhost/internal/services/kubeapi/stream"
)

// consoles resizes a container's console (*runtime.Runtime).
type consoles interface {
	ResizeConsole(ctx context.Context, id string, width, height uint32) error
}

// Attach streams what the container writes from now on, until it stops or
// ctx ends: podhost's containers write to their log (the log driver), not
// to a pipe an attach could join, so it follows the current log file as
// `kubectl logs -f --since-time=<now>` would: every record stamped at or
// after the attach began, also one written before the file was opened
// (with --tail=0 that one counted as history and was lost). A container
// with stdin (which podhost takes only with tty) gets the client's input
// through its stdin FIFO (runtime.StdinPath) and the client's terminal
// size on its console (stdinOnce is refused at apply: the end of a killed
// kubectl's attach does not reach this yet, see docs/fields.md). Without
// stdin the input is read and dropped, as containerd's CRI attach does.
func (s *StreamRuntime) Attach(ctx context.Context, pod *corev1.Pod, container string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan stream.TerminalSize) error {
	start := time.Now()
	cs := podview.ContainerStatus(pod, container)
	if cs == nil || cs.State.Running == nil {
		return fmt.Errorf("container %s is not running", container)
	}
	id := strings.TrimPrefix(cs.ContainerID, "containerd://")
	attempt := int(cs.RestartCount)
	path := logs.Path(s.LogDir, pod.Namespace, pod.Name, string(pod.UID), container, attempt)
	c := specContainer(pod, container)
	switch {
	case stdin != nil && c != nil && c.Stdin:
		f, err := s.stdin.open(id, runtime.StdinPath(path))
		if err != nil {
			return fmt.Errorf("container %s: stdin: %w", container, err)
		}
		go func() { _, _ = io.Copy(f, stdin) }()
	case stdin != nil:
		go func() { _, _ = io.Copy(io.Discard, stdin) }()
	}
	if tty && resize != nil && s.Consoles != nil {
		go s.resizeConsole(ctx, id, resize)
	}
	running := func() bool {
		p, err := s.Pod(pod.Namespace, pod.Name)
		return err == nil && p.UID == pod.UID && attemptRunning(p, container, attempt)
	}
	opts := logs.ReadOptions{Follow: true, Tail: -1, Since: start, Running: running}
	err := logs.Read(ctx, path, opts, orDiscard(stdout), orDiscard(stderr))
	if !running() {
		s.stdin.close(id) // its console is gone with it
	}
	return err
}

// resizeConsole passes the client's terminal sizes on to the console.
func (s *StreamRuntime) resizeConsole(ctx context.Context, id string, resize <-chan stream.TerminalSize) {
	for {
		select {
		case <-ctx.Done():
			return
		case sz, ok := <-resize:
			if !ok {
				return
			}
			_ = s.Consoles.ResizeConsole(ctx, id, uint32(sz.Width), uint32(sz.Height)) // the console may be gone: the attach ends with it
		}
	}
}

// specContainer is the pod's container (init or app) named name.
func specContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}

// stdinWriters holds the write ends of containers' stdin FIFOs from
// their first attach on: the shim shuts a console down when the last
// writer of its FIFO closes, so between attaches podhost keeps one open. A podhost restart closes them: the
// container's stdin then ends (docs/fields.md).
type stdinWriters struct {
	mu    sync.Mutex
	files map[string]*os.File
}

// open returns container id's writer of the FIFO at path, opening it the
// first time. A FIFO no shim reads (the container stopped, or its stdin
// was closed already) is an error, not a wait.
func (w *stdinWriters) open(id, path string) (*os.File, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f := w.files[id]; f != nil {
		return f, nil
	}
	w.pruneLocked()
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ENXIO) {
		return nil, errors.New("closed (podhost restarted after an earlier attach)")
	}
	if err != nil {
		return nil, err
	}
	if w.files == nil {
		w.files = map[string]*os.File{}
	}
	w.files[id] = f
	return f, nil
}

// pruneLocked closes the writers of FIFOs no shim reads any more (their
// container stopped between attaches: nothing else would close them), so
// that they last at most until the next first attach of a container.
func (w *stdinWriters) pruneLocked() {
	for id, f := range w.files {
		probe, err := os.OpenFile(f.Name(), os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			_ = probe.Close()
			continue
		}
		_ = f.Close() // ENXIO: no reader; or the FIFO is gone with its pod
		delete(w.files, id)
	}
}

// close closes container id's writer: with no other writer, the
// container's stdin ends.
func (w *stdinWriters) close(id string) {
	w.mu.Lock()
	f := w.files[id]
	delete(w.files, id)
	w.mu.Unlock()
	if f != nil {
		_ = f.Close()
	}
}
