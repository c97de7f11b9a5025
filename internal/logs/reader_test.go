package logs

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/logs/driver"
)

// syncBuffer is a goroutine-safe buffer with a condition wait.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls cond over the buffer's content until it holds or 10s pass.
func (b *syncBuffer) waitFor(t *testing.T, what string, cond func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond(b.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; have:\n%s", what, b.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newTestWriter(t *testing.T, cfg driver.Config) *driver.Writer {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "pod", "c", "0.log")
	}
	w, err := driver.OpenWriter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func clockWriter(t *testing.T, cfg driver.Config, start time.Time) *driver.Writer {
	w := newTestWriter(t, cfg)
	var mu sync.Mutex
	now := start
	w.SetClock(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	})
	return w
}

func readAll(t *testing.T, path string, opts ReadOptions) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if err := Read(context.Background(), path, opts, &out, &errb); err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String()
}

func TestReadJoinsPartialsAndSplitsStreams(t *testing.T) {
	w := newTestWriter(t, driver.Config{})
	_ = w.WriteRecord(Stdout, true, []byte("hel"))
	_ = w.WriteRecord(Stderr, false, []byte("e1"))
	_ = w.WriteRecord(Stdout, false, []byte("lo"))
	_ = w.WriteRecord(Stderr, true, []byte("dangling"))
	out, errs := readAll(t, w.Path(), ReadOptions{Tail: TailAll})
	if out != "hello\n" || errs != "e1\ndangling" {
		t.Fatalf("out %q err %q", out, errs)
	}
}

func TestReadTailSinceTimestamps(t *testing.T) {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	w := clockWriter(t, driver.Config{}, start)
	for i := 1; i <= 10; i++ {
		_ = w.WriteRecord(Stdout, false, fmt.Appendf(nil, "m%d", i)) // at start+i s
	}
	out, _ := readAll(t, w.Path(), ReadOptions{Tail: 3})
	if out != "m8\nm9\nm10\n" {
		t.Fatalf("tail: %q", out)
	}
	out, _ = readAll(t, w.Path(), ReadOptions{Tail: 0})
	if out != "" {
		t.Fatalf("tail 0: %q", out)
	}
	out, _ = readAll(t, w.Path(), ReadOptions{Tail: TailAll, Since: start.Add(9 * time.Second)})
	if out != "m9\nm10\n" {
		t.Fatalf("since: %q", out)
	}
	out, _ = readAll(t, w.Path(), ReadOptions{Tail: 1, Timestamps: true})
	if out != "2024-01-01T00:00:10Z m10\n" {
		t.Fatalf("timestamps: %q", out)
	}
}

func TestReadAcrossRotatedFiles(t *testing.T) {
	w := newTestWriter(t, driver.Config{MaxSize: 200, MaxFiles: 10})
	for i := range 30 {
		_ = w.WriteRecord(Stdout, false, fmt.Appendf(nil, "n%02d", i))
	}
	out, _ := readAll(t, w.Path(), ReadOptions{Tail: TailAll})
	lines := strings.Fields(out)
	if len(lines) != 30 || lines[0] != "n00" || lines[29] != "n29" {
		t.Fatalf("got %v", lines)
	}
	out, _ = readAll(t, w.Path(), ReadOptions{Tail: 7})
	if got := strings.Fields(out); len(got) != 7 || got[0] != "n23" {
		t.Fatalf("tail across files: %v", got)
	}
}

func TestReadMissingFile(t *testing.T) {
	out, errs := readAll(t, filepath.Join(t.TempDir(), "nope.log"), ReadOptions{Tail: TailAll})
	if out != "" || errs != "" {
		t.Fatal("output from a missing file")
	}
}

func startFollow(t *testing.T, path string, opts ReadOptions) (*syncBuffer, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- Read(ctx, path, opts, out, out) }()
	return out, func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Read: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Read did not return after cancel")
		}
	}
}

func TestFollowAppends(t *testing.T) {
	w := newTestWriter(t, driver.Config{})
	_ = w.WriteRecord(Stdout, false, []byte("old1"))
	_ = w.WriteRecord(Stdout, false, []byte("old2"))
	out, stop := startFollow(t, w.Path(), ReadOptions{Follow: true, Tail: 1})
	defer stop()
	out.waitFor(t, "history", func(s string) bool { return s == "old2\n" })
	_ = w.WriteRecord(Stdout, true, []byte("new"))
	_ = w.WriteRecord(Stderr, false, []byte("err"))
	_ = w.WriteRecord(Stdout, false, []byte("1"))
	out.waitFor(t, "new lines", func(s string) bool { return s == "old2\nerr\nnew1\n" })
}

func TestFollowWaitsForFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c", "0.log")
	out, stop := startFollow(t, path, ReadOptions{Follow: true, Tail: TailAll})
	defer stop()
	w := newTestWriter(t, driver.Config{Path: path})
	_ = w.WriteRecord(Stdout, false, []byte("first"))
	out.waitFor(t, "first line", func(s string) bool { return s == "first\n" })
}

func TestFollowAcrossRotation(t *testing.T) {
	w := newTestWriter(t, driver.Config{MaxSize: 150, MaxFiles: 1})
	out, stop := startFollow(t, w.Path(), ReadOptions{Follow: true, Tail: TailAll})
	defer stop()
	var want strings.Builder
	for i := range 50 {
		msg := fmt.Sprintf("r%02d", i)
		want.WriteString(msg + "\n")
		_ = w.WriteRecord(Stdout, false, []byte(msg))
		if i%2 == 1 {
			// let the follower keep up (3 records fit in a file): a file
			// created and rotated away between two reads is never opened
			out.waitFor(t, msg, func(s string) bool { return strings.HasSuffix(s, msg+"\n") })
		}
	}
	out.waitFor(t, "all lines in order", func(s string) bool { return s == want.String() })
}

// A follow ends by itself once the container stopped, after reading what
// its log driver wrote until a poll interval later (the kubelet's ReadLogs
// ends a follow when the container is no longer running).
func TestFollowEndsWhenContainerStops(t *testing.T) {
	w := newTestWriter(t, driver.Config{})
	_ = w.WriteRecord(Stdout, false, []byte("before"))
	var running atomic.Bool
	running.Store(true)
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Read(context.Background(), w.Path(), ReadOptions{Follow: true, Tail: TailAll, Running: running.Load}, out, out)
	}()
	out.waitFor(t, "history", func(s string) bool { return s == "before\n" })
	running.Store(false)
	_ = w.WriteRecord(Stdout, false, []byte("last words")) // the driver's flush after the exit
	select {
	case err := <-done:
		if err != nil || out.String() != "before\nlast words\n" {
			t.Fatalf("Read = %v, printed %q", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not end after the container stopped")
	}
}
