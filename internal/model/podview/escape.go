package podview

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Container-controlled text (termination messages, probe output in
// events, a manifest URL's error text) must not drive the terminal it is
// printed on (CVE-2021-25743: kubectl printed escape sequences raw; since
// kubernetes#112553 kubectl get, describe and events replace ESC by "^["
// and CR by "\r" — cli-runtime's printers.EscapeTerminal). podhost does
// the same, and also escapes every other character a terminal acts on:
// the C0 controls but tab and newline in caret notation (BS as "^H"), DEL
// as "^?", the C1 controls (U+0080–U+009F, "\u009b") and the bytes
// 0x80–0x9F that are not part of a UTF-8 sequence ("\x9b": 8-bit CSI to a
// terminal not in UTF-8 mode).

// EscapeTerminal returns s with the characters a terminal acts on escaped;
// tab and newline are kept (descriptions are laid out with them).
func EscapeTerminal(s string) string { return escape(s, false) }

// EscapeCell is EscapeTerminal that also escapes tab and newline ("\t",
// "\n"): a table cell stays one cell on one line.
func EscapeCell(s string) string { return escape(s, true) }

func escape(s string, cell bool) string {
	if safe(s, cell) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1 && s[i] >= 0x80 && s[i] <= 0x9f:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t' || r == '\n':
			if !cell {
				b.WriteRune(r)
			} else if r == '\t' {
				b.WriteString(`\t`)
			} else {
				b.WriteString(`\n`)
			}
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(r) + '@')
		case r == 0x7f:
			b.WriteString("^?")
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// safe reports whether s has nothing to escape (the common case: no copy).
func safe(s string, cell bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && (cell || c != '\t' && c != '\n') || c == 0x7f || c >= 0x80 && c <= 0x9f || c == 0xc2 {
			return false
		}
	}
	return true
}

// terminalWriter escapes what it writes with EscapeTerminal. Each Write
// is escaped on its own: a tabwriter writes whole cells, fmt whole
// strings, so no character is split between two writes.
type terminalWriter struct{ w io.Writer }

// NewTerminalWriter returns a writer that escapes everything written to it
// with EscapeTerminal before writing it to w.
func NewTerminalWriter(w io.Writer) io.Writer { return terminalWriter{w} }

func (t terminalWriter) Write(p []byte) (int, error) {
	s := string(p)
	if safe(s, false) {
		return t.w.Write(p)
	}
	if _, err := io.WriteString(t.w, EscapeTerminal(s)); err != nil {
		return 0, err
	}
	return len(p), nil
}
