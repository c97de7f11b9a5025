package driver

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

const confLog = "pods/ns_name_uid/c/0.log"

func lines(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s %03d\n", prefix, i)
	}
	return b.String()
}

func out(data string) step  { return step{stream: 0, data: data} }
func errs(data string) step { return step{stream: 1, data: data} }

// outWait writes to stdout and waits for the driver to have written n
// records in all (the order across the two streams is then fixed).
func outWait(data string, n int) step { return step{stream: 0, data: data, waitRecords: n} }

// chunked writes s to stdout in pieces of n bytes (partial reads).
func chunked(s string, n int) []step {
	var steps []step
	for len(s) > n {
		steps = append(steps, out(s[:n]))
		s = s[n:]
	}
	return append(steps, out(s))
}

func strp(s string) *string { return &s }

const oldRecord = "2024-01-01T00:00:00.000000000Z stdout F old\n"

func conformanceCases() []confCase {
	x := strings.Repeat
	return []confCase{
		{name: "plain", steps: []step{outWait("hello\nworld\n", 2), errs("oops\n")}},
		{name: "crlf", steps: []step{out("a\r\nb\r\n\r\nx\ry\n\r\r\n")}},
		{name: "empty lines", steps: []step{outWait("\n\n\n", 3), errs("\n")}},
		{name: "longer than MaxLineSize", steps: []step{out(x("x", 2*MaxLineSize+10) + "\nshort\n")}},
		{name: "exactly MaxLineSize", steps: []step{out(x("a", MaxLineSize) + "\n" + x("b", MaxLineSize-1) + "\n" +
			x("c", MaxLineSize-1) + "\r\n" + x("d", MaxLineSize-2) + "\r\n")}},
		{name: "long line in small writes", steps: chunked(x("0123456789", 5000)+"\nend\n", 1000)},
		{name: "no newline at EOF", steps: []step{{stream: 0, data: "one\ntwo", close: true, waitRecords: 2}, errs("three")}},
		{name: "MaxLineSize at EOF", steps: []step{out(x("z", MaxLineSize+5))}},
		{name: "interleaved", steps: []step{
			{stream: 0, data: "o1\n", waitRecords: 1}, {stream: 1, data: "e1\ne2\n", waitRecords: 3},
			{stream: 0, data: "o2 partial ", waitRecords: 3}, {stream: 1, data: "e3\n", waitRecords: 4},
			{stream: 0, data: "o2 end\n", waitRecords: 5}, {stream: 1, data: "e4 no newline"},
		}},
		{name: "rotation MaxFiles 0", cfg: Config{MaxSize: 300, MaxFiles: 0}, steps: []step{out(lines("line", 40))}},
		{name: "rotation MaxFiles 1", cfg: Config{MaxSize: 300, MaxFiles: 1}, steps: []step{out(lines("line", 40))}},
		{name: "rotation MaxFiles 3", cfg: Config{MaxSize: 300, MaxFiles: 3}, steps: []step{out(lines("line", 40))}},
		{name: "rotation of long lines", cfg: Config{MaxSize: MaxLineSize + 100, MaxFiles: 2},
			steps: []step{out(x("L", 3*MaxLineSize) + "\n")}},
		{name: "record larger than MaxSize", cfg: Config{MaxSize: 10, MaxFiles: 2}, steps: []step{out("aaaa\nbbbb\ncccc\n")}},
		{name: "existing file appended", pre: map[string]string{confLog: oldRecord},
			steps: []step{out("new\n")}},
		{name: "existing file counts toward MaxSize", cfg: Config{MaxSize: 100, MaxFiles: 3},
			pre:   map[string]string{confLog: oldRecord + oldRecord, confLog + ".1": oldRecord, confLog + ".3": "gone\n"},
			steps: []step{out("new\nnext\n")}},
		{name: "SIGTERM then EOF", steps: []step{outWait("before\n", 1), {stream: 1, data: "after\n", term: true, waitRecords: 2}, out("tail")}},
		{name: "SIGTERM, pipes never closed", keepOpen: true, wantCode: 1,
			steps: []step{out("before\n"), {stream: 0, data: "after\n", term: true}}},
		{name: "zone Asia/Kolkata", tz: strp("Asia/Kolkata"), steps: []step{out("ist\n")}},
		{name: "zone America/St_Johns", tz: strp("America/St_Johns"), steps: []step{out("nst\n")}},
		{name: "zone empty TZ is UTC", tz: strp(""), steps: []step{out("utc\n")}},
		{name: "open fails: discard", pre: map[string]string{"pods": "afile\n"}, steps: []step{out(lines("x", 100))}},
		{name: "path with escapes", cfg: Config{Path: "pods/a b&c=d%e+f;g/c/0.log"}, steps: []step{out("ok\n")}},
	}
}

func badArgsCases() []confCase {
	bad := [][]string{
		{}, {"logs"}, {Command}, {"x", Command, "path=/tmp/x"}, {Command, "path=/tmp/x", "extra"},
		{Command, ""}, {Command, "path="}, {Command, "max-size=10"}, {Command, "path=/tmp/x&bogus=1"},
		{Command, "path=/tmp/x&path=/tmp/y"}, {Command, "path=/tmp/x&max-size=10&max-size=20"},
		{Command, "path=/tmp/x&max-size=abc"}, {Command, "path=/tmp/x&max-files=1.5"},
		{Command, "path=/tmp/x&max-size=99999999999999999999"}, {Command, "path=/tmp/%zz"},
		{Command, "path=/tmp/x%2"}, {Command, "path=/tmp/x;max-size=1"}, {Command, "max-files"},
	}
	var cases []confCase
	for _, argv := range bad {
		cases = append(cases, confCase{name: fmt.Sprintf("bad args %q", argv), argv: argv, wantCode: ExitBadArgs,
			steps: []step{out(lines("drained", 2000)), errs("e\n")}})
	}
	return cases
}

// goodArgsCases: argv forms ParseArgs accepts besides what Args writes.
func goodArgsCases() []confCase {
	p := "{dir}/" + confLog
	good := []string{"path=" + p + "&max-size=&max-files=", "max-files=%2B2&path=" + p + "&max-size=-5",
		"&&path=" + p + "&", "path=" + p + "&max-size=0040&max-files=-1"}
	var cases []confCase
	for i, q := range good {
		// (not named after q: the run's directory is named after the test)
		cases = append(cases, confCase{name: fmt.Sprintf("good args %d", i), argv: []string{Command, q}, steps: []step{out(lines("l", 30))}})
	}
	return cases
}

func TestConformanceCAndGoDrivers(t *testing.T) {
	cbin := cDriver(t)
	gobin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := append(conformanceCases(), badArgsCases()...)
	cases = append(cases, goodArgsCases()...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.tz != nil && *c.tz != "" {
				if _, err := os.Stat("/usr/share/zoneinfo/" + *c.tz); err != nil {
					t.Skipf("no tzdata for %s", *c.tz)
				}
			}
			want := runDriver(t, gobin, c)
			got := runDriver(t, cbin, c)
			if want.Code != c.wantCode {
				t.Errorf("Go driver: exit %d, want %d", want.Code, c.wantCode)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("C driver differs from the Go driver:\n--- C:\n%s\n--- Go:\n%s", got, want)
			}
		})
	}
}
