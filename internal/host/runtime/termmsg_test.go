package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/logs/driver"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// writeLog writes lines as CRI records (stdout) to a log file.
func writeLog(t *testing.T, path string, lines []string) {
	t.Helper()
	var buf []byte
	for _, l := range lines {
		buf = driver.AppendRecord(buf, time.Unix(0, 0), "stdout", false, []byte(l))
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

func numbered(n, width int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%0*d", width, i)
	}
	return out
}

func TestReadTerminationMessage(t *testing.T) {
	big := strings.Repeat("a", 5000) + "END"
	lines100 := numbered(100, 3)
	longLines := numbered(80, 100)
	tests := []struct {
		name     string
		file     *string // nil: no file
		policy   string
		exitCode int32
		log      []string
		want     string
	}{
		{name: "file", file: ptr("bye"), policy: "File", exitCode: 1, want: "bye"},
		{name: "file on success", file: ptr("done\n"), policy: "File", want: "done\n"},
		{name: "last 4096 bytes", file: &big, policy: "File", want: big[len(big)-4096:]},
		{name: "missing file", policy: "File", exitCode: 1, log: []string{"x"}, want: ""},
		{name: "file policy ignores logs", file: ptr(""), policy: "File", exitCode: 1, log: []string{"x"}, want: ""},
		{name: "fallback", file: ptr(""), policy: "FallbackToLogsOnError", exitCode: 1, log: []string{"one", "two"},
			want: "one\ntwo\n"},
		{name: "fallback without file", policy: "FallbackToLogsOnError", exitCode: 2, log: []string{"x"}, want: "x\n"},
		{name: "no fallback on success", file: ptr(""), policy: "FallbackToLogsOnError", log: []string{"x"}, want: ""},
		{name: "file wins over logs", file: ptr("msg"), policy: "FallbackToLogsOnError", exitCode: 1, log: []string{"x"},
			want: "msg"},
		{name: "last 80 lines", file: ptr(""), policy: "FallbackToLogsOnError", exitCode: 1, log: lines100,
			want: strings.Join(lines100[20:], "\n") + "\n"},
		{name: "last 2048 bytes", file: ptr(""), policy: "FallbackToLogsOnError", exitCode: 1, log: longLines,
			want: (strings.Join(longLines, "\n") + "\n")[80*101-2048:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			labels := map[string]string{
				wellknown.LabelTerminationLog:    filepath.Join(dir, "termination-log"),
				wellknown.LabelTerminationPolicy: tt.policy,
				wellknown.LabelLogPath:           filepath.Join(dir, "0.log"),
			}
			if tt.file != nil {
				if err := os.WriteFile(labels[wellknown.LabelTerminationLog], []byte(*tt.file), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			if tt.log != nil {
				writeLog(t, labels[wellknown.LabelLogPath], tt.log)
			}
			got := readTerminationMessage(context.Background(), labels, tt.exitCode)
			if got != tt.want {
				t.Fatalf("message %q (%d bytes), want %q (%d bytes)", got, len(got), tt.want, len(tt.want))
			}
		})
	}
}

// The message of an exited container whose task is gone is read once
// and kept until the container is removed; while the task is there (its
// log may lack the last line) it is read each time.
func TestTerminationMessageCached(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "termination-log")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	write("zeroth")
	r := &Runtime{termMsgs: map[string]string{}}
	pc := &podstate.Container{ID: "c1", ExitCode: 1, Labels: map[string]string{wellknown.LabelTerminationLog: file}}
	if got := r.terminationMessage(context.Background(), pc, false); got != "zeroth" {
		t.Fatalf("message with the task there %q", got)
	}
	write("first")
	if got := r.terminationMessage(context.Background(), pc, true); got != "first" {
		t.Fatalf("message %q: kept while the task was there", got)
	}
	write("second")
	if got := r.terminationMessage(context.Background(), pc, true); got != "first" {
		t.Fatalf("cached message %q", got)
	}
	r.forgetTerminationMessage("c1")
	if got := r.terminationMessage(context.Background(), pc, true); got != "second" {
		t.Fatalf("message after forget %q", got)
	}
}

func ptr[T any](v T) *T { return &v }
