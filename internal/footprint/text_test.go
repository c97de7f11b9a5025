package footprint

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const smapsSample = `00400000-011e9000 r-xp 00000000 08:01 123 /usr/bin/podhost
Size:              14244 kB
Rss:               11364 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
011e9000-0214b000 r--p 00de9000 08:01 123 /usr/bin/podhost
Rss:               13536 kB
Anonymous:             0 kB
0214b000-021e1000 rw-p 01d4b000 08:01 123 /usr/bin/podhost
Anonymous:           536 kB
021e1000-0422f000 rw-p 00000000 00:00 0 
Anonymous:           132 kB
03000000-03001000 r-xp 00000000 08:01 124 /usr/bin/podhost-old
Anonymous:             0 kB
04000000-04002000 r-xp 00000000 08:01 123 /usr/bin/podhost
Anonymous:             4 kB
05000000-05002000 r--p 00000000 08:01 123 /usr/bin/podhost
Anonymous:             0 kB
Swap:                  8 kB
SwapPss:               8 kB
7f0000000000-7f0000001000 r--p 00000000 08:01 125 /usr/lib/x.so
Anonymous:             0 kB
`

func TestReadOnlyMappings(t *testing.T) {
	tests := []struct {
		name, path, smaps string
		want              []mapping
	}{
		{name: "text and rodata, not data, not another file, not a copied-on-write mapping (in memory or swapped)",
			path: "/usr/bin/podhost", smaps: smapsSample,
			want: []mapping{{0x400000, 0x11e9000}, {0x11e9000, 0x214b000}}},
		{name: "a replaced executable",
			path:  "/usr/bin/podhost (deleted)",
			smaps: "00400000-00401000 r-xp 00000000 08:01 9 /usr/bin/podhost (deleted)\nAnonymous: 0 kB\n",
			want:  []mapping{{0x400000, 0x401000}}},
		{name: "a path with spaces",
			path:  "/opt/my tools/podhost",
			smaps: "00400000-00401000 r--p 00000000 08:01 9 /opt/my tools/podhost\n",
			want:  []mapping{{0x400000, 0x401000}}},
		{name: "none", path: "/usr/bin/other", smaps: smapsSample},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readOnlyMappings(strings.NewReader(tt.smaps), tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %x, want %x", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %x, want %x", got, tt.want)
				}
			}
		})
	}
}

// rssFileKiB is RssFile from /proc/self/status.
func rssFileKiB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.Fields(v)[0])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

func TestTrimTextDropsMappedPages(t *testing.T) {
	before := rssFileKiB(t)
	n, err := TrimText()
	if staticErr := staticExecutable("/proc/self/exe"); staticErr != nil {
		// A PIE or cgo test binary (-buildmode=pie, -race): refused whole.
		if err == nil || n != 0 || !strings.Contains(err.Error(), "not a static executable") {
			t.Fatalf("TrimText of a non-static binary (%v) = %d, %v; want 0 and a refusal", staticErr, n, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKiB(t)
	if n == 0 || after >= before {
		t.Fatalf("trimmed %d bytes: RssFile %d kB before, %d kB after", n, before, after)
	}
	// The dropped code runs again: it faults back in from the page cache.
	if _, err := TrimText(); err != nil {
		t.Fatal(err)
	}
}

func TestReaperTrims(t *testing.T) {
	var calls atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	after := make(chan struct{})
	go Reaper{After: after, Period: time.Millisecond, TrimPeriod: 3 * time.Millisecond,
		Trim: func() (int, error) { calls.Add(1); return 0, nil }}.Run(ctx)
	time.Sleep(20 * time.Millisecond) // a window in which nothing may happen
	if c := calls.Load(); c != 0 {
		t.Fatalf("trimmed %d times before the cold start ended", c)
	}
	close(after)
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("trimmed %d times in 5s, want the first at once and then every TrimPeriod", calls.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// countingHandler counts the records logged at or above Info.
type countingHandler struct{ n atomic.Int32 }

func (h *countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *countingHandler) Handle(context.Context, slog.Record) error    { h.n.Add(1); return nil }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *countingHandler) WithGroup(string) slog.Handler                { return h }

func TestReaperLogsTrimFailureOnce(t *testing.T) {
	var calls atomic.Int32
	h := &countingHandler{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Reaper{After: closed(), Period: time.Millisecond, TrimPeriod: time.Millisecond, Logger: slog.New(h),
		Trim: func() (int, error) { calls.Add(1); return 0, errors.New("not a static executable") }}.Run(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("trimmed %d times in 5s", calls.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if n := h.n.Load(); n != 1 {
		t.Fatalf("%d failures logged at Info or above over %d trims, want 1", n, calls.Load())
	}
}
