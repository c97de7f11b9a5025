package source

import (
	"bytes"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landed-file hints. The debounce waits for a quiet dir because a manifest
// may be read while it is still being written. A write that ended is
// visible to inotify as IN_CLOSE_WRITE (the writer closed the file) or
// IN_MOVED_TO (a finished file renamed into the dir, the atomic-write
// idiom): when one arrives for a manifest and no other manifest is being
// written, the dir is read at once instead of after the debounce. fsnotify
// does not expose these two events, so a second inotify instance on the
// same dir reports them; the fsnotify watch and the debounce still do all
// the rest, and without hints (e.g. inotify instances exhausted) nothing
// changes but the wait.

// landing decides, from one dir's events, when the dir may be read at once.
type landing struct {
	wd      int32           // the watch the entries are from
	writing map[string]bool // manifests written to and not closed yet
}

// event takes one inotify event on name and reports whether the dir may be
// read now.
func (l *landing) event(name string, mask uint32) bool {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		clear(l.writing) // events were lost: the debounce decides until the next close
		return false
	}
	if !IsManifestName(name) || mask&unix.IN_ISDIR != 0 {
		return false
	}
	switch {
	case mask&unix.IN_MODIFY != 0:
		l.writing[name] = true
		return false
	case mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
		delete(l.writing, name)
		return false
	case mask&(unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO) != 0:
		delete(l.writing, name)
		return len(l.writing) == 0
	}
	return false
}

const landedMask = unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO |
	unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_ONLYDIR

// landedWatch is the inotify instance; C gets a value when the dir may be
// read now (coalesced: one pending value at most).
type landedWatch struct {
	f  *os.File
	wd atomic.Int32 // the dir's watch; -1: none (only its events count)
	C  chan struct{}
}

func newLandedWatch() (*landedWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	// Non-blocking: reads go through Go's poller and Close ends them.
	w := &landedWatch{f: os.NewFile(uintptr(fd), "inotify"), C: make(chan struct{}, 1)}
	w.wd.Store(-1)
	return w, nil
}

// The methods below are no-ops on a nil watch (no hints).

// add watches dir (again: a recreated dir is a new inode).
func (w *landedWatch) add(dir string) error {
	if w == nil {
		return nil
	}
	wd, err := unix.InotifyAddWatch(int(w.f.Fd()), dir, landedMask)
	if err != nil {
		return fmt.Errorf("inotify watch %s: %w", dir, err)
	}
	w.wd.Store(int32(wd))
	return nil
}

// remove drops the watch of a dir that was removed or moved away (a moved
// dir's watch would follow it).
func (w *landedWatch) remove() {
	if w == nil {
		return
	}
	if wd := w.wd.Swap(-1); wd >= 0 {
		_, _ = unix.InotifyRmWatch(int(w.f.Fd()), uint32(wd)) // gone already with a removed dir
	}
}

// run reads events until close.
func (w *landedWatch) run() {
	l := landing{wd: -1, writing: map[string]bool{}}
	buf := make([]byte, 16<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return // closed (or broken: the debounce still works)
		}
		if readNow(&l, buf[:n], w.wd.Load()) {
			select {
			case w.C <- struct{}{}:
			default:
			}
		}
	}
}

// readNow feeds the raw events in buf of watch wd to l: true if a write
// ended in them and none is under way after them. Events of other
// watches (a dir moved away, replaced) are dropped.
func readNow(l *landing, buf []byte, wd int32) bool {
	if wd != l.wd {
		l.wd = wd
		clear(l.writing)
	}
	now := false
	for len(buf) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(buf) {
			break
		}
		name := string(bytes.TrimRight(buf[unix.SizeofInotifyEvent:end], "\x00"))
		if (ev.Wd == wd || ev.Mask&unix.IN_Q_OVERFLOW != 0) && l.event(name, ev.Mask) {
			now = true
		}
		buf = buf[end:]
	}
	return now && len(l.writing) == 0
}

func (w *landedWatch) close() {
	if w != nil {
		_ = w.f.Close()
	}
}

// ready is nil (never ready) without hints.
func (w *landedWatch) ready() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.C
}
