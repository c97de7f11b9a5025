package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/logs/driver"
)

const streamWait = 30 * time.Second

// tcpPair is two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); acc <- c }()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-acc
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a.(*net.TCPConn), b.(*net.TCPConn)
}

// TestForwardHalfClose: the client's end of input reaches the pod as a
// half-close and the pod's answer after it still comes back; forward then
// ends without error.
func TestForwardHalfClose(t *testing.T) {
	client, st := tcpPair(t)    // the client's stream
	podSide, conn := tcpPair(t) // the pod's server, the connection forward dials
	go func() {                 // answers after reading to EOF, as `nc -e wc -c`
		n, _ := io.Copy(io.Discard, podSide)
		fmt.Fprintf(podSide, "%d\n", n)
		podSide.Close()
	}()
	done := make(chan error, 1)
	go func() { done <- forward(t.Context(), conn, st) }()
	if _, err := client.Write([]byte(strings.Repeat("x", 100000))); err != nil {
		t.Fatal(err)
	}
	if err := client.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = client.SetReadDeadline(time.Now().Add(streamWait))
	got, err := io.ReadAll(client)
	if err != nil || string(got) != "100000\n" {
		t.Fatalf("answer %q, %v; want %q", got, err, "100000\n")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("forward: %v", err)
		}
	case <-time.After(streamWait):
		t.Fatal("forward did not end")
	}
}

// TestForwardCancel: a session that ends closes both sides.
func TestForwardCancel(t *testing.T) {
	client, st := tcpPair(t)
	podSide, conn := tcpPair(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- forward(ctx, conn, st) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("forward after cancel: %v", err)
		}
	case <-time.After(streamWait):
		t.Fatal("forward did not end with its context")
	}
	for _, c := range []net.Conn{client, podSide} {
		_ = c.SetReadDeadline(time.Now().Add(streamWait))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("%v still open after cancel: %v", c.LocalAddr(), err)
		}
	}
}

// TestAttachFollowsLog: attach prints what the container writes from now
// on, stdout and stderr apart, none of its history, drains the stdin it
// does not use, and ends when the container's attempt stops.
func TestAttachFollowsLog(t *testing.T) {
	dir := t.TempDir()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "c", RestartCount: 2,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	path := logs.Path(dir, "default", "web", "u1", "c", 2)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write := func(stream, msg string) {
		if _, err := f.Write(driver.AppendRecord(nil, time.Now(), stream, false, []byte(msg))); err != nil {
			t.Fatal(err)
		}
	}
	write("stdout", "history")
	var running atomic.Bool
	running.Store(true)
	rt := &StreamRuntime{LogDir: dir, Pod: func(ns, name string) (*corev1.Pod, error) {
		p := pod.DeepCopy()
		if !running.Load() {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}
		}
		return p, nil
	}}
	out, errw := &notifyBuffer{ch: make(chan struct{}, 8)}, &notifyBuffer{ch: make(chan struct{}, 8)}
	stdin, stdinW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- rt.Attach(t.Context(), pod, "c", stdin, nopCloser{out}, nopCloser{errw}, false, nil) }()
	if _, err := stdinW.Write([]byte("typed\n")); err != nil { // drained, not stuck
		t.Fatal(err)
	}
	write("stdout", "new out")
	write("stderr", "new err")
	out.waitFor(t, "new out\n")
	errw.waitFor(t, "new err\n")
	running.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Attach: %v", err)
		}
	case <-time.After(streamWait):
		t.Fatal("Attach went on after the container stopped")
	}
	stdinW.Close()
	if strings.Contains(out.String(), "history") {
		t.Errorf("attach printed the log's history: %q", out.String())
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// notifyBuffer signals each write.
type notifyBuffer struct {
	mu sync.Mutex
	b  strings.Builder
	ch chan struct{}
}

func (n *notifyBuffer) Write(p []byte) (int, error) {
	n.mu.Lock()
	n.b.Write(p)
	n.mu.Unlock()
	select {
	case n.ch <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (n *notifyBuffer) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.b.String()
}

func (n *notifyBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(streamWait)
	for !strings.Contains(n.String(), want) {
		select {
		case <-n.ch:
		case <-deadline:
			t.Fatalf("got %q, want %q", n.String(), want)
		}
	}
}
