package printers

import (
	"bytes"
	"testing"
)

// Event rows (events, events -w) and table cells print container text
// escaped and on one line.
func TestTableCellsAreEscaped(t *testing.T) {
	var b bytes.Buffer
	lw := NewLineWriter(&b)
	lw.Print([]string{"Warning", "Unhealthy", "Liveness probe failed: \x1b[2J\rfake\nNAME   READY"})
	if err := Table(&b, []string{"A"}, [][]string{{"x\x1b]0;t\x07"}}, true); err != nil {
		t.Fatal(err)
	}
	want := "Warning   Unhealthy   Liveness probe failed: ^[[2J\\rfake\\nNAME   READY\nx^[]0;t^G\n"
	if b.String() != want {
		t.Fatalf("got  %q\nwant %q", b.String(), want)
	}
}
