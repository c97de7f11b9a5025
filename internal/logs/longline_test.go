package logs

import (
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/logs/driver"
)

// heapWriter counts what it is given and samples the heap every 64
// writes, keeping the highest figure.
type heapWriter struct {
	n, writes int64
	peak      uint64
	last      byte
}

func (h *heapWriter) Write(p []byte) (int, error) {
	h.n += int64(len(p))
	if len(p) > 0 {
		h.last = p[len(p)-1]
	}
	if h.writes++; h.writes%64 == 0 {
		h.sample()
	}
	return len(p), nil
}

func (h *heapWriter) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.peak = max(h.peak, ms.HeapAlloc)
}

// A container printing one 300 MB line without a newline: `logs -f`
// streams it as the log driver writes it, in bounded memory. Before
// MaxJoined the reader joined every P record of the line and the heap grew
// by the line's size (380 MB in the daemon of issue 31) while the client
// received nothing.
func TestFollowStreamsAHugeLineInBoundedMemory(t *testing.T) {
	const size = 300_000_000
	w := newTestWriter(t, driver.Config{}) // no rotation: the whole line stays in one file
	var done atomic.Bool
	go func() {
		_ = w.Copy(Stdout, io.LimitReader(repeatReader('x'), size)) // no newline: ends as one F record at EOF
		done.Store(true)
	}()
	out := &heapWriter{}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	opts := ReadOptions{Follow: true, Tail: TailAll, Running: func() bool { return !done.Load() }}
	if err := Read(ctx, w.Path(), opts, out, io.Discard); err != nil {
		t.Fatal(err)
	}
	out.sample()
	growth := int64(out.peak) - int64(before.HeapAlloc)
	t.Logf("streamed %d MB in %d writes; heap grew by at most %.1f MB", out.n>>20, out.writes, float64(growth)/(1<<20))
	if out.n != size+1 || out.last != '\n' {
		t.Errorf("got %d bytes ending in %q, want %d ending in a newline", out.n, out.last, size+1)
	}
	if growth > 10<<20 {
		t.Errorf("heap grew by %d MB, want < 10 MB", growth>>20)
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// A line longer than MaxJoined is written in pieces as it comes, its
// timestamp once, before the first; shorter ones are written whole, so a
// line of the other stream cannot land in their middle.
func TestLongLinePiecesAndTimestamps(t *testing.T) {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	w := clockWriter(t, driver.Config{}, start)
	long := strings.Repeat("y", 3*MaxJoined+5)
	_ = w.Copy(Stdout, strings.NewReader("short\n"+long+"\n"))
	pw := &pieceWriter{}
	if err := Read(context.Background(), w.Path(), ReadOptions{Tail: TailAll, Timestamps: true}, pw, io.Discard); err != nil {
		t.Fatal(err)
	}
	want := "2024-01-01T00:00:01Z short\n2024-01-01T00:00:02Z " + long + "\n"
	if got := pw.buf.String(); got != want {
		t.Fatalf("got %d bytes, want %d: %.80q…", len(got), len(want), got)
	}
	if pw.writes < 4 || pw.pieces[0] != "2024-01-01T00:00:01Z short\n" {
		t.Errorf("pieces %d, first %q: want the short line whole and the long one in pieces", pw.writes, pw.pieces[0])
	}
	for _, p := range pw.pieces {
		if len(p) > MaxJoined+MaxLineSize+64 {
			t.Errorf("a piece of %d bytes", len(p))
		}
	}
}

type pieceWriter struct {
	buf    bytes.Buffer
	writes int
	pieces []string
}

func (p *pieceWriter) Write(b []byte) (int, error) {
	p.writes++
	if len(p.pieces) < 2 {
		p.pieces = append(p.pieces, string(b))
	}
	return p.buf.Write(b)
}

// readHeap reads path (not following) into a heapWriter and returns it
// with how much the heap grew at most meanwhile.
func readHeap(t *testing.T, path string, opts ReadOptions) (*heapWriter, int64) {
	t.Helper()
	out := &heapWriter{}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := Read(context.Background(), path, opts, out, io.Discard); err != nil {
		t.Fatal(err)
	}
	out.sample()
	return out, int64(out.peak) - int64(before.HeapAlloc)
}

// --tail counts messages instead of keeping them: the last message of a
// file, a 64 MB line, is printed without holding it (the termination
// message's fallback to the log reads the tail the same way).
func TestTailOfAHugeLine(t *testing.T) {
	const size = 64 << 20
	w := newTestWriter(t, driver.Config{})
	_ = w.Copy(Stdout, strings.NewReader("first\n"))
	_ = w.Copy(Stdout, io.MultiReader(io.LimitReader(repeatReader('c'), size), strings.NewReader("\n")))
	out, growth := readHeap(t, w.Path(), ReadOptions{Tail: 1})
	t.Logf("tail 1: %d MB, heap grew by at most %.1f MB", out.n>>20, float64(growth)/(1<<20))
	if out.n != size+1 || out.last != '\n' {
		t.Errorf("tail 1: %d bytes, want %d", out.n, size+1)
	}
	if growth > 10<<20 {
		t.Errorf("heap grew by %d MB, want < 10 MB", growth>>20)
	}
}

// A line of a log file longer than any record (a torn or foreign file) is
// skipped without being held, and the records after it are read.
func TestOverlongFileLineIsSkipped(t *testing.T) {
	w := newTestWriter(t, driver.Config{})
	_ = w.WriteRecord(Stdout, false, []byte("before"))
	f, err := os.OpenFile(w.Path(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(f, io.LimitReader(repeatReader('z'), 64<<20))
	_, _ = f.Write([]byte("\n"))
	f.Close()
	_ = w.WriteRecord(Stdout, false, []byte("after"))
	out, growth := readHeap(t, w.Path(), ReadOptions{Tail: TailAll})
	t.Logf("a 64 MB file line skipped; heap grew by at most %.1f MB", float64(growth)/(1<<20))
	if out.n != int64(len("before\nafter\n")) {
		t.Errorf("got %d bytes, want before and after", out.n)
	}
	if growth > 10<<20 {
		t.Errorf("heap grew by %d MB, want < 10 MB", growth>>20)
	}
}
