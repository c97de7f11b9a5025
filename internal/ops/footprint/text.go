package footprint

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// TrimText gives back the pages of the daemon's own executable that only
// a burst used (package init, a cold start, a big apply). For the
// executable's read-only mappings (text, rodata, pclntab) it advises
// MADV_RANDOM, so a fault on a page that is not cached reads that page
// alone, MADV_PAGEOUT, which evicts the pages only this process maps (in
// one call: no code runs between dropping a page's mapping and its
// eviction to fault it back in), and MADV_DONTNEED for the rest; then it
// evicts the file's cached pages that no process maps
// (POSIX_FADV_DONTNEED). What the daemon still uses is read again from the
// file. It returns the bytes advised.
//
// Why it pays: a read fault of a file mapping maps the 64 KiB around the
// page (the kernel's fault-around) wherever those pages are cached, and a
// fault on a page that is not cached reads the 128 KiB around it; so code
// run once at start stays mapped, counted in RSS and cached, until memory
// pressure makes the kernel reclaim it, and dropping the mappings alone
// only lets the same windows fault back (docs/decisions.md 16).
//
// Only a static executable (ET_EXEC, no dynamic section, no RELRO: what
// `make build` makes) is trimmed, as nothing writes its read-only
// mappings; a PIE or cgo build's relocated RELRO pages are private copies
// that would be lost. A mapping holding private copies, in memory or
// swapped (a debugger's breakpoint, a uprobe), is left alone; one set in
// the moment between reading /proc/self/smaps and the madvise is lost.
// An executable on tmpfs or ramfs is only unmapped: its pages are its only
// copy (PAGEOUT would swap them out). A kernel before 5.4 has no
// MADV_PAGEOUT, and one that does pages out file pages only for a process
// that owns the file or may write it (root does): without it the fadvise
// still evicts what the unmapping freed.
func TrimText() (int, error) {
	maps, err := selfText("trim text")
	if err != nil {
		return 0, err
	}
	file, err := os.Open("/proc/self/exe") // the mapped file, even if replaced since
	if err != nil {
		return 0, fmt.Errorf("trim text: %w", err)
	}
	defer file.Close()
	var fs unix.Statfs_t
	if err := unix.Fstatfs(int(file.Fd()), &fs); err != nil {
		return 0, fmt.Errorf("trim text: statfs %s: %w", file.Name(), err)
	}
	evict := fs.Type != unix.TMPFS_MAGIC && fs.Type != unix.RAMFS_MAGIC
	total, err := dropMappings(maps, evict)
	if !evict {
		return total, err
	}
	if ferr := unix.Fadvise(int(file.Fd()), 0, 0, unix.FADV_DONTNEED); ferr != nil {
		err = errors.Join(err, fmt.Errorf("trim text: fadvise %s: %w", file.Name(), ferr))
	}
	return total, err
}

// TextUse returns how many bytes of the executable's read-only mappings
// this process has mapped, and how many of those it used (their Rss and
// Referenced in /proc/self/smaps) since the last call: after reading them
// it clears the accessed bits of all its file-backed pages
// (/proc/self/clear_refs 3: the executable's, and bbolt's mapping of the
// state db, which then look unused to reclaim until touched again).
func TextUse() (mapped, used int, err error) {
	maps, err := selfText("text use")
	if err != nil {
		return 0, 0, err
	}
	for _, m := range maps {
		mapped += m.rssKiB << 10
		used += m.referencedKiB << 10
	}
	if err := os.WriteFile("/proc/self/clear_refs", []byte("3"), 0); err != nil {
		return 0, 0, fmt.Errorf("text use: %w", err)
	}
	return mapped, used, nil
}

// selfText is this static executable's read-only mappings; op names the
// caller in errors.
func selfText(op string) ([]mapping, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := selfStatic(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer f.Close()
	maps, err := readOnlyMappings(f, exe)
	if err != nil {
		return nil, fmt.Errorf("%s: /proc/self/smaps: %w", op, err)
	}
	if len(maps) == 0 {
		return nil, fmt.Errorf("%s: no read-only mapping of %s without private copies in /proc/self/smaps", op, exe)
	}
	return maps, nil
}

var advices = []struct {
	name  string
	value int
	evict bool // only where the pages are evicted
}{{"MADV_RANDOM", unix.MADV_RANDOM, false}, {"MADV_PAGEOUT", unix.MADV_PAGEOUT, true}, {"MADV_DONTNEED", unix.MADV_DONTNEED, false}}

// dropMappings advises each mapping MADV_RANDOM, MADV_PAGEOUT (if evict
// and the kernel has it) and MADV_DONTNEED, and returns the bytes dropped.
func dropMappings(maps []mapping, evict bool) (int, error) {
	total := 0
	var errs []error
	for _, m := range maps {
		ok := true
		for _, a := range advices {
			if a.evict && !evict {
				continue
			}
			// A raw system call: the range is not Go memory, no slice is made of it.
			_, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, uintptr(a.value))
			if e == unix.EINVAL && a.value == unix.MADV_PAGEOUT {
				continue // before Linux 5.4
			}
			if e != 0 {
				errs = append(errs, fmt.Errorf("trim text: madvise %s %x-%x: %w", a.name, m.start, m.end, e))
				ok = false
			}
		}
		if ok {
			total += int(m.end - m.start)
		}
	}
	return total, errors.Join(errs...)
}

// selfStatic is staticExecutable of this process's executable. The
// verdict is kept; a failure to read the file (EMFILE) is not.
func selfStatic() error {
	staticVerdict.Lock()
	defer staticVerdict.Unlock()
	if staticVerdict.done {
		return staticVerdict.err
	}
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer f.Close()
	staticVerdict.err, staticVerdict.done = staticELF(f, "/proc/self/exe"), true
	return staticVerdict.err
}

var staticVerdict struct {
	sync.Mutex
	done bool
	err  error
}

// staticELF fails unless f (read from path) is an ET_EXEC ELF file
// without a dynamic section, an interpreter or a RELRO segment.
func staticELF(f *elf.File, path string) error {
	if f.Type != elf.ET_EXEC {
		return fmt.Errorf("%s is %v, not a static executable", path, f.Type)
	}
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_DYNAMIC, elf.PT_INTERP, elf.PT_GNU_RELRO:
			return fmt.Errorf("%s has a %v segment: not a static executable", path, p.Type)
		}
	}
	return nil
}

type mapping struct {
	start, end            uintptr
	rssKiB, referencedKiB int
}

// readOnlyMappings returns the mappings of path in an smaps listing that
// are private, not writable and hold no anonymous (copied-on-write) page,
// in memory or swapped.
func readOnlyMappings(r io.Reader, path string) ([]mapping, error) {
	var out []mapping
	inPath := false // the last header was one of path's read-only mappings
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Bytes()
		if v, ok := bytes.CutPrefix(line, []byte("Rss:")); ok {
			if inPath {
				out[len(out)-1].rssKiB = kib(v)
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("Referenced:")); ok {
			if inPath {
				out[len(out)-1].referencedKiB = kib(v)
			}
			continue
		}
		if v, ok := cutAnyPrefix(line, "Anonymous:", "Swap:"); ok {
			if inPath && kib(v) != 0 {
				out, inPath = out[:len(out)-1], false
			}
			continue
		}
		fields := bytes.Fields(line)
		if len(fields) < 5 || bytes.HasSuffix(fields[0], []byte(":")) {
			continue // an attribute line ("Rss:   12 kB", "VmFlags: rd ex")
		}
		inPath = false
		lo, hi, ok := bytes.Cut(fields[0], []byte("-"))
		if !ok || !bytes.HasSuffix(line, []byte(" "+path)) {
			continue
		}
		if p := string(fields[1]); p != "r-xp" && p != "r--p" {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("bad mapping line %q", line)
		}
		out, inPath = append(out, mapping{start: uintptr(start), end: uintptr(end)}), true
	}
	return out, sc.Err()
}

// kib is the number in an smaps value ("   12 kB"), 0 if none.
func kib(v []byte) int {
	f := bytes.Fields(v)
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(string(f[0]))
	return n
}

func cutAnyPrefix(line []byte, prefixes ...string) ([]byte, bool) {
	for _, p := range prefixes {
		if v, ok := bytes.CutPrefix(line, []byte(p)); ok {
			return v, true
		}
	}
	return nil, false
}
