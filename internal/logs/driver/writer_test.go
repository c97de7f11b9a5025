package driver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func readRecords(t *testing.T, path string) []Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rec, err := ParseRecord(append([]byte(nil), sc.Bytes()...))
		if err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out
}

func newTestWriter(t *testing.T, cfg Config) *Writer {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "pod", "c", "0.log")
	}
	w, err := OpenWriter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func TestWriterFormat(t *testing.T) {
	w := newTestWriter(t, Config{})
	fixed := time.Date(2024, 5, 6, 7, 8, 9, 1000, time.UTC)
	w.now = func() time.Time { return fixed }
	if err := w.Copy(Stdout, strings.NewReader("hello\nwin\r\n\nlast")); err != nil {
		t.Fatal(err)
	}
	if err := w.Copy(Stderr, strings.NewReader("oops\n")); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(w.cfg.Path)
	want := "2024-05-06T07:08:09.000001000Z stdout F hello\n" +
		"2024-05-06T07:08:09.000001000Z stdout F win\n" +
		"2024-05-06T07:08:09.000001000Z stdout F \n" +
		"2024-05-06T07:08:09.000001000Z stdout F last\n" +
		"2024-05-06T07:08:09.000001000Z stderr F oops\n"
	if string(data) != want {
		t.Fatalf("got\n%s\nwant\n%s", data, want)
	}
	st, _ := os.Stat(w.cfg.Path)
	if st.Mode().Perm() != fileMode {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	dst, _ := os.Stat(filepath.Dir(w.cfg.Path))
	if dst.Mode().Perm() != dirMode {
		t.Errorf("dir mode %v", dst.Mode().Perm())
	}
}

func TestWriterSplitsLongLines(t *testing.T) {
	w := newTestWriter(t, Config{})
	long := strings.Repeat("x", 2*MaxLineSize+10)
	if err := w.Copy(Stdout, strings.NewReader(long+"\nshort\n")); err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, w.cfg.Path)
	if len(recs) != 4 {
		t.Fatalf("%d records", len(recs))
	}
	wantLen := []int{MaxLineSize, MaxLineSize, 10, 5}
	wantPartial := []bool{true, true, false, false}
	for i, r := range recs {
		if len(r.Msg) != wantLen[i] || r.Partial != wantPartial[i] {
			t.Errorf("record %d: len %d partial %v", i, len(r.Msg), r.Partial)
		}
	}
}

func TestWriterRotation(t *testing.T) {
	w := newTestWriter(t, Config{MaxSize: 300, MaxFiles: 2})
	for i := range 40 {
		if err := w.WriteRecord(Stdout, false, fmt.Appendf(nil, "line %02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	p := w.cfg.Path
	for _, name := range []string{p, RotatedPath(p, 1), RotatedPath(p, 2)} {
		st, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 300 {
			t.Errorf("%s: %d bytes", name, st.Size())
		}
	}
	if _, err := os.Stat(RotatedPath(p, 3)); !os.IsNotExist(err) {
		t.Fatalf("%s should not exist: %v", RotatedPath(p, 3), err)
	}
	// The kept files hold a contiguous suffix, oldest first.
	var all []string
	for _, name := range []string{RotatedPath(p, 2), RotatedPath(p, 1), p} {
		for _, r := range readRecords(t, name) {
			all = append(all, string(r.Msg))
		}
	}
	if all[len(all)-1] != "line 39" {
		t.Fatalf("last %q", all[len(all)-1])
	}
	for i := 1; i < len(all); i++ {
		var a, b int
		_, _ = fmt.Sscanf(all[i-1], "line %d", &a)
		_, _ = fmt.Sscanf(all[i], "line %d", &b)
		if b != a+1 {
			t.Fatalf("gap between %q and %q", all[i-1], all[i])
		}
	}
}

func TestWriterRotationWithoutBackups(t *testing.T) {
	w := newTestWriter(t, Config{MaxSize: 100, MaxFiles: 0})
	for i := range 10 {
		if err := w.WriteRecord(Stdout, false, fmt.Appendf(nil, "line %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(RotatedPath(w.cfg.Path, 1)); !os.IsNotExist(err) {
		t.Fatal("no rotated file expected")
	}
	recs := readRecords(t, w.cfg.Path)
	if string(recs[len(recs)-1].Msg) != "line 9" {
		t.Fatal("last record lost")
	}
}

func TestWriterConcurrentStreams(t *testing.T) {
	w := newTestWriter(t, Config{})
	var wg sync.WaitGroup
	for _, s := range []string{Stdout, Stderr} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b strings.Builder
			for i := range 500 {
				fmt.Fprintf(&b, "%s %d %s\n", s, i, strings.Repeat("y", 100))
			}
			if err := w.Copy(s, strings.NewReader(b.String())); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	recs := readRecords(t, w.cfg.Path)
	if len(recs) != 1000 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		if !strings.HasPrefix(string(r.Msg), r.Stream+" ") {
			t.Fatalf("mixed record %+v", r)
		}
	}
}

func TestArgsRoundTrip(t *testing.T) {
	cfg := Config{Path: "/var/log/pods/ns_a b&c_uid/c/0.log", MaxSize: 123, MaxFiles: 4}
	args := Args(cfg)
	if len(args) != 1 {
		t.Fatalf("args %v: must be one key so argv order is fixed", args)
	}
	argv := []string{"/usr/bin/podhost"}
	for k, v := range args {
		argv = append(argv, k, v)
	}
	if argv[1] != Command {
		t.Fatalf("argv %v", argv)
	}
	got, err := ParseArgs(argv)
	if err != nil || got != cfg {
		t.Fatalf("got %+v, %v", got, err)
	}
	for _, argv := range [][]string{{"podhost", Command}, {"podhost", "x", Command, "path=/a"}, {"podhost", Command, "path=/a", "x"},
		{"podhost", Command, "path=/a&bogus=1"}, {"podhost", Command, "path=/a&path=/b"}, {"podhost", Command, "max-size=1"}} {
		if _, err := ParseArgs(argv); err == nil {
			t.Errorf("argv %q accepted", argv)
		}
	}
}

func TestDriverCopiesBothStreams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c", "1.log")
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	readyCalled := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Driver(Config{Path: path})(context.Background(),
			Streams{Stdout: outR, Stderr: errR},
			func() error { close(readyCalled); return nil })
	}()
	<-readyCalled
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("file must exist once ready: %v", err)
	}
	fmt.Fprintln(outW, "out")
	fmt.Fprintln(errW, "err")
	outW.Close()
	errW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range readRecords(t, path) {
		got[r.Stream] = string(r.Msg)
	}
	if got[Stdout] != "out" || got[Stderr] != "err" {
		t.Fatalf("got %v", got)
	}
}

func TestParseRecordErrors(t *testing.T) {
	for _, line := range []string{"", "garbage", "2024-01-01T00:00:00Z stdin F x", "2024-01-01T00:00:00Z stdout X x"} {
		if _, err := ParseRecord([]byte(line)); err == nil {
			t.Errorf("%q accepted", line)
		}
	}
	r, err := ParseRecord([]byte("2024-01-01T00:00:00Z stderr F"))
	if err != nil || len(r.Msg) != 0 || r.Stream != Stderr {
		t.Fatalf("%+v %v", r, err)
	}
}
