package podview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEscapeTerminal(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode ✓":          "plain text, ünïcode ✓",
		"\x1b[2J\x1b[1;1Hspoofed":        "^[[2J^[[1;1Hspoofed",
		"done\rFAKE":                     `done\rFAKE`,
		"a\bb\x07c\x00d\x7fe":            "a^Hb^Gc^@d^?e",
		"multi\nline\twith tab":          "multi\nline\twith tab",
		"c1 \u009b31m red":               `c1 \u009b31m red`,
		"raw byte \x9b31m red":           `raw byte \x9b31m red`,
		"invalid \xff stays, \xc3 too":   "invalid \xff stays, \xc3 too",
		"\u00a0nbsp and \u00e9 are text": "\u00a0nbsp and \u00e9 are text",
	} {
		if got := EscapeTerminal(in); got != want {
			t.Errorf("EscapeTerminal(%q) = %q, want %q", in, got, want)
		}
	}
	if got := EscapeCell("a\tb\nc\x1b"); got != `a\tb\nc^[` {
		t.Errorf("EscapeCell = %q", got)
	}
}

// describe prints a termination message and an event message that try to
// clear the screen and rewrite the line with their escape sequences
// escaped.
func TestDescribeEscapesContainerText(t *testing.T) {
	now := time.Now()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "i:1"}}},
		Status: corev1.PodStatus{Message: "m\x1b]0;title\x07", ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1,
				Message: "\x1b[2J\x1b[1;1Hall good\rOK"}}}}}}
	events := []Event{{Time: now, Type: "Warning", Reason: "Unhealthy", Message: "Liveness probe failed: \x1b[31mred\x9b0m"}}
	var b bytes.Buffer
	if err := Describe(&b, p, events, time.Time{}, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\r\x07\u009b") || strings.Contains(out, "\x9b") {
		t.Fatalf("control characters printed raw:\n%q", out)
	}
	for _, want := range []string{`^[[2J^[[1;1Hall good\rOK`, `^[[31mred\x9b0m`, "m^[]0;title^G"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
}
