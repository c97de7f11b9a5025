package source

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestLanding(t *testing.T) {
	type ev struct {
		name string
		mask uint32
	}
	for _, tc := range []struct {
		name string
		evs  []ev
		want []bool // per event: read now?
	}{
		{"write and close", []ev{{"a.yaml", unix.IN_MODIFY}, {"a.yaml", unix.IN_CLOSE_WRITE}}, []bool{false, true}},
		{"renamed into place", []ev{{".a.yaml.tmp", unix.IN_MODIFY}, {".a.yaml.tmp", unix.IN_CLOSE_WRITE}, {".a.yaml.tmp", unix.IN_MOVED_FROM}, {"a.yaml", unix.IN_MOVED_TO}},
			[]bool{false, false, false, true}},
		{"another manifest still written", []ev{{"b.yaml", unix.IN_MODIFY}, {"a.yaml", unix.IN_CLOSE_WRITE}, {"a.yaml", unix.IN_MOVED_TO}, {"b.yaml", unix.IN_CLOSE_WRITE}},
			[]bool{false, false, false, true}},
		{"a manifest removed while written", []ev{{"b.yaml", unix.IN_MODIFY}, {"b.yaml", unix.IN_DELETE}, {"a.yaml", unix.IN_CLOSE_WRITE}}, []bool{false, false, true}},
		{"not a manifest", []ev{{"README.md", unix.IN_CLOSE_WRITE}, {"a.yaml.swp", unix.IN_MOVED_TO}, {"a.yaml~", unix.IN_CLOSE_WRITE}}, []bool{false, false, false}},
		{"a dir", []ev{{"x.yaml", unix.IN_MOVED_TO | unix.IN_ISDIR}}, []bool{false}},
		{"lost events forget the writes", []ev{{"b.yaml", unix.IN_MODIFY}, {"", unix.IN_Q_OVERFLOW}, {"a.yaml", unix.IN_CLOSE_WRITE}}, []bool{false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := landing{writing: map[string]bool{}}
			for i, e := range tc.evs {
				if got := l.event(e.name, e.mask); got != tc.want[i] {
					t.Errorf("event %d %s %#x: read now %v, want %v", i, e.name, e.mask, got, tc.want[i])
				}
			}
		})
	}
}

// TestRunReadsFinishedWritesAtOnce: with a debounce and relist of an hour,
// only the landed-file hints can make a snapshot (the first in each quiet
// period: one per harness here). A file still being written makes none;
// closing it does, with the whole file.
func TestRunReadsFinishedWritesAtOnce(t *testing.T) {
	hourDebounce := func(c *Config) { c.Debounce = time.Hour }
	t.Run("renamed into place", func(t *testing.T) {
		dir := secureDir(t)
		h := start(t, dir, hourDebounce)
		h.expect("")
		writeFile(t, dir, ".a.yaml.tmp", podYAML("a", "img:1"))
		rename(t, dir, ".a.yaml.tmp", "a.yaml")
		h.expect("default/a=img:1")
	})
	t.Run("closed while another is written", func(t *testing.T) {
		dir := secureDir(t)
		h := start(t, dir, hourDebounce)
		h.expect("")
		f, err := os.OpenFile(filepath.Join(dir, "b.yaml"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		full := podYAML("b", "img:1")
		if _, err := f.WriteString(full[:len(full)/2]); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "c.yaml", podYAML("c", "img:1")) // lands while b.yaml is half written
		if _, err := f.WriteString(full[len(full)/2:]); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		h.expect("default/b=img:1 default/c=img:1")
	})
}

// TestDebouncerNow: a finished write fires at once, and events racing it
// do not postpone that; the next one in the same quiet period waits.
func TestDebouncerNow(t *testing.T) {
	d := newDebouncer(time.Hour, 10*time.Hour)
	defer d.stop()
	d.kick()
	d.now()
	d.kick() // fsnotify's event for the same rename, after the hint
	select {
	case <-d.c():
		d.fired()
	case <-time.After(waitTimeout):
		t.Fatal("now() did not fire at once")
	}
	d.now() // a second finished write within the quiet period: debounced
	if d.immediate || !d.pending {
		t.Fatalf("second now(): immediate %v pending %v, want a debounced fire", d.immediate, d.pending)
	}
}

// rawEvent encodes one inotify event as the kernel does.
func rawEvent(wd int32, mask uint32, name string) []byte {
	n := (len(name) + 1 + 15) / 16 * 16 // NUL-padded
	b := make([]byte, unix.SizeofInotifyEvent+n)
	ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
	ev.Wd, ev.Mask, ev.Len = wd, mask, uint32(n)
	copy(b[unix.SizeofInotifyEvent:], name)
	return b
}

// TestReadNowOnlyTheDirsWatch: events of another watch (the dir moved
// away) neither trigger a read nor block one; a new watch starts clean.
func TestReadNowOnlyTheDirsWatch(t *testing.T) {
	l := landing{wd: -1, writing: map[string]bool{}}
	batch := func(evs ...[]byte) []byte { return bytes.Join(evs, nil) }
	if readNow(&l, batch(rawEvent(2, unix.IN_MODIFY, "old.yaml"), rawEvent(2, unix.IN_CLOSE_WRITE, "x.yaml")), 1) {
		t.Fatal("an old watch's close triggered a read")
	}
	if len(l.writing) != 0 {
		t.Fatalf("an old watch's write is tracked: %v", l.writing)
	}
	if !readNow(&l, batch(rawEvent(1, unix.IN_MODIFY, "a.yaml"), rawEvent(1, unix.IN_CLOSE_WRITE, "a.yaml")), 1) {
		t.Fatal("a finished write did not trigger a read")
	}
	readNow(&l, rawEvent(1, unix.IN_MODIFY, "b.yaml"), 1) // b.yaml left half written in the old dir
	if !readNow(&l, rawEvent(3, unix.IN_MOVED_TO, "c.yaml"), 3) {
		t.Fatal("the new watch inherited the old dir's half-written file")
	}
}
