package printers

import (
	"fmt"
	"io"
	"strings"
)

// LineWriter prints table rows one at a time (watches), each column padded
// to the widest cell seen so far plus kubectl's 3 spaces, so rows printed
// later line up with the table printed first as long as they fit.
type LineWriter struct {
	w      io.Writer
	widths []int
}

// NewLineWriter prints to w.
func NewLineWriter(w io.Writer) *LineWriter { return &LineWriter{w: w} }

// Fit widens the columns for rows without printing them.
func (l *LineWriter) Fit(rows ...[]string) {
	for _, r := range rows {
		for i, c := range EscapeCells(r) {
			if i >= len(l.widths) {
				l.widths = append(l.widths, 0)
			}
			l.widths[i] = max(l.widths[i], len(c))
		}
	}
}

// Print prints row (its cells escaped: EscapeCells).
func (l *LineWriter) Print(row []string) {
	row = EscapeCells(row)
	l.Fit(row)
	var b strings.Builder
	for i, c := range row {
		if i == len(row)-1 {
			b.WriteString(c)
			break
		}
		b.WriteString(c + strings.Repeat(" ", l.widths[i]-len(c)+3))
	}
	fmt.Fprintln(l.w, strings.TrimRight(b.String(), " "))
}
