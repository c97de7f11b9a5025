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
// file, page by page. It returns the bytes advised.
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
func TrimText() (int, error) {
	maps, err := selfText()
	if err != nil {
		return 0, err
	}
	file, err := os.Open("/proc/self/exe") // the mapped file, even if replaced since
	if err != nil {
		return 0, fmt.Errorf("trim text: %w", err)
	}
	defer file.Close()
	total, err := dropMappings(maps)
	if ferr := unix.Fadvise(int(file.Fd()), 0, 0, unix.FADV_DONTNEED); ferr != nil {
		err = errors.Join(err, fmt.Errorf("trim text: fadvise: %w", ferr))
	}
	return total, err
}

// TextUse returns how many bytes of the executable's read-only mappings
// this process has mapped, and how many of those it used (their Rss and
// Referenced in /proc/self/smaps) since the last call: it clears the
// referenced bits of its file pages (/proc/self/clear_refs 3) after
// reading them.
func TextUse() (mapped, used int, err error) {
	maps, err := selfText()
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

// selfText is this static executable's read-only mappings.
func selfText() ([]mapping, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("trim text: %w", err)
	}
	if err := selfStatic(); err != nil {
		return nil, fmt.Errorf("trim text: %w", err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("trim text: %w", err)
	}
	defer f.Close()
	maps, err := readOnlyMappings(f, exe)
	if err != nil {
		return nil, fmt.Errorf("trim text: /proc/self/smaps: %w", err)
	}
	return maps, nil
}

// dropMappings advises each mapping MADV_RANDOM, MADV_PAGEOUT and
// MADV_DONTNEED, and returns the bytes dropped.
func dropMappings(maps []mapping) (int, error) {
	total := 0
	var errs []error
	for _, m := range maps {
		ok := true
		for _, advice := range []int{unix.MADV_RANDOM, unix.MADV_PAGEOUT, unix.MADV_DONTNEED} {
			// A raw system call: the range is not Go memory, no slice is made of it.
			if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, uintptr(advice)); e != 0 {
				errs = append(errs, fmt.Errorf("trim text: madvise(%d) %x-%x: %w", advice, m.start, m.end, e))
				ok = false
			}
		}
		if ok {
			total += int(m.end - m.start)
		}
	}
	return total, errors.Join(errs...)
}

// selfStatic is staticExecutable of this process's executable, read once.
var selfStatic = sync.OnceValue(func() error { return staticExecutable("/proc/self/exe") })

// staticExecutable fails unless path is an ET_EXEC ELF file without a
// dynamic section, an interpreter or a RELRO segment.
func staticExecutable(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
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
			if inPath && len(bytes.Fields(v)) > 0 && string(bytes.Fields(v)[0]) != "0" {
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
