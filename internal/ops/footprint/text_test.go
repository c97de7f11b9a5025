package footprint

import (
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

const smapsSample = `00400000-011e9000 r-xp 00000000 08:01 123 /usr/bin/podhost
Size:              14244 kB
Rss:               11364 kB
Referenced:        11000 kB
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
			want: []mapping{{0x400000, 0x11e9000, 11364, 11000}, {0x11e9000, 0x214b000, 13536, 0}}},
		{name: "a replaced executable",
			path:  "/usr/bin/podhost (deleted)",
			smaps: "00400000-00401000 r-xp 00000000 08:01 9 /usr/bin/podhost (deleted)\nAnonymous: 0 kB\n",
			want:  []mapping{{start: 0x400000, end: 0x401000}}},
		{name: "a path with spaces",
			path:  "/opt/my tools/podhost",
			smaps: "00400000-00401000 r--p 00000000 08:01 9 /opt/my tools/podhost\nRss: 4 kB\n",
			want:  []mapping{{start: 0x400000, end: 0x401000, rssKiB: 4}}},
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

// textKiB is the Rss of this binary's read-only mappings (RssFile does not
// count a binary on tmpfs: its pages are shmem).
func textKiB(t *testing.T) int {
	t.Helper()
	maps, err := selfText("test")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range maps {
		n += m.rssKiB
	}
	return n
}

func TestTrimTextDropsMappedPages(t *testing.T) {
	if staticErr := staticExecutable("/proc/self/exe"); staticErr != nil {
		// A PIE or cgo test binary (-buildmode=pie, -race): refused whole.
		n, err := TrimText()
		if err == nil || n != 0 || !strings.Contains(err.Error(), "not a static executable") {
			t.Fatalf("TrimText of a non-static binary (%v) = %d, %v; want 0 and a refusal", staticErr, n, err)
		}
		return
	}
	before := textKiB(t)
	n, err := TrimText()
	if err != nil {
		t.Fatal(err)
	}
	after := textKiB(t)
	if n == 0 || after >= before {
		t.Fatalf("trimmed %d bytes: %d kB of text mapped before, %d kB after", n, before, after)
	}
	// The dropped code runs again: it faults back in.
	if _, err := TrimText(); err != nil {
		t.Fatal(err)
	}
}

// cachedPages is how many pages of the mappings are in the page cache
// (mincore).
func cachedPages(t *testing.T, maps []mapping) int {
	t.Helper()
	ps := uintptr(os.Getpagesize())
	n := 0
	for _, m := range maps {
		vec := make([]byte, (m.end-m.start+ps-1)/ps)
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, m.start, m.end-m.start, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			t.Fatalf("mincore: %v", e)
		}
		for _, v := range vec {
			n += int(v & 1)
		}
	}
	return n
}

func TestTrimTextEvicts(t *testing.T) {
	if err := staticExecutable("/proc/self/exe"); err != nil {
		t.Skipf("not trimmed: %v", err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs("/proc/self/exe", &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC || fs.Type == unix.RAMFS_MAGIC || fs.Type == unix.OVERLAYFS_SUPER_MAGIC {
		t.Skipf("the test binary is on a file system of type %#x: its pages may be their only copy", fs.Type)
	}
	// Cache the whole file (synced: a fresh build's dirty pages are not
	// evicted), as package init and a cold start leave it.
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, f); err != nil {
		t.Fatal(err)
	}
	maps, err := selfText("test")
	if err != nil {
		t.Fatal(err)
	}
	total := cachedPages(t, maps)
	if _, err := TrimText(); err != nil {
		t.Fatal(err)
	}
	// What runs from here on is read again, page by page.
	left := cachedPages(t, maps)
	t.Logf("%d of %d pages cached after the trim", left, total)
	if left > total*3/4 {
		t.Fatalf("%d of %d pages still cached after the trim", left, total)
	}
}

func TestTextUse(t *testing.T) {
	if err := staticExecutable("/proc/self/exe"); err != nil {
		t.Skipf("not trimmed: %v", err)
	}
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil {
		t.Skipf("no clear_refs (CONFIG_PROC_PAGE_MONITOR): %v", err)
	}
	maps, err := selfText("test")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps { // map all of it
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_POPULATE_READ); e == unix.EINVAL {
			t.Skipf("MADV_POPULATE_READ: %v (before Linux 5.14)", e)
		} else if e != 0 {
			t.Fatalf("MADV_POPULATE_READ: %v", e)
		}
	}
	if _, _, err := TextUse(); err != nil { // clears the referenced bits
		t.Fatal(err)
	}
	// Only the code that ran between two calls was used: never more than
	// half of what is mapped (this bound holds whatever the kernel does, as
	// nothing but a use sets an accessed bit).
	//
	// That some code was used is up to the kernel: its DAMON (a kdamond
	// thread, paddr operations: on on the CI machines) and reclaim clear
	// accessed bits of the pages they sample at any time, so any number of
	// windows can read 0 used (5 in a row seen under load). With a kdamond
	// running, the test only logs that; without one, 50 windows reading 0
	// would mean TextUse is broken.
	var mapped, windows int
	for attempt := 1; attempt <= 50; attempt++ {
		var u int
		if mapped, u, err = TextUse(); err != nil {
			t.Fatal(err)
		}
		if u > mapped/2 {
			t.Fatalf("TextUse: %d bytes mapped, %d used since the last call", mapped, u)
		}
		if u > 0 {
			windows++
		}
	}
	switch {
	case windows > 0:
		t.Logf("TextUse: %d bytes mapped; code used in %d of 50 windows", mapped, windows)
	case kdamondRunning():
		t.Logf("TextUse: %d bytes mapped, no window saw code used: a kdamond clears accessed bits on this machine", mapped)
	default:
		t.Fatalf("TextUse: %d bytes mapped, none used since the last call, 50 times (no kdamond runs)", mapped)
	}
}

// kdamondRunning reports whether a DAMON worker thread (kdamond.N) runs
// on this machine.
func kdamondRunning() bool {
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, c := range comms {
		if b, err := os.ReadFile(c); err == nil && strings.HasPrefix(string(b), "kdamond") {
			return true
		}
	}
	return false
}

// staticExecutable fails unless path is an ET_EXEC ELF file without a
// dynamic section, an interpreter or a RELRO segment.
func staticExecutable(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return staticELF(f, path)
}
