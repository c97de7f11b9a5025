package manifest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxErrors caps how many errors one file reports; the rest are summarized
// in a final line so that a garbage file cannot flood logs.
const maxErrors = 30

// FieldError is one problem in a manifest file. Its Error() is always exactly
// one line:
//
//	web.yaml: spec.containers[0].image: Required value
//	web.yaml: [doc 2] spec.containers[0].image: Required value
//
// File is the base name of the path given to Decode. Doc is the 1-based
// index of the document in a multi-document file, 0 when the file holds a
// single document (or the error concerns the whole file). Field is the field
// path ("" when the error is not about a field, e.g. a YAML syntax error).
type FieldError struct {
	File   string
	Doc    int
	Field  string
	Detail string
}

// Error implements error. Control characters (including newlines) that came
// from user input are escaped, so the message is always a single line.
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Doc > 0 {
		fmt.Fprintf(&b, "[doc %d] ", e.Doc)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Detail)
	return oneLine(b.String())
}

// ErrorList is every problem found in one file. Error() joins the one-line
// messages with "\n".
type ErrorList []*FieldError

// Error implements error.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// DisplayName is the name errors give a file: its base name, "<stdin>" for
// "-", "<input>" for "".
func DisplayName(file string) string {
	if file == "" {
		return "<input>"
	}
	if file == "-" {
		return "<stdin>"
	}
	return filepath.Base(file)
}

// oneLine escapes control characters, line and paragraph separators and
// invalid UTF-8 so that s prints as one line.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, needsEscape) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case needsEscape(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp)
}

// errs accumulates the errors of one document.
type errs []*FieldError

func (e *errs) add(fieldPath, format string, args ...any) {
	*e = append(*e, &FieldError{Field: fieldPath, Detail: fmt.Sprintf(format, args...)})
}

// addField converts apimachinery field errors.
func (e *errs) addField(list field.ErrorList) {
	for _, fe := range list {
		*e = append(*e, &FieldError{Field: fe.Field, Detail: fe.ErrorBody()})
	}
}

// finish stamps file and document index on every error, caps the list and
// returns it as an ErrorList (nil when there are no errors).
func finish(file string, all []*FieldError) error {
	if len(all) == 0 {
		return nil
	}
	name := DisplayName(file)
	out := make(ErrorList, 0, min(len(all), maxErrors+1))
	for i, fe := range all {
		if i == maxErrors {
			out = append(out, &FieldError{File: name,
				Detail: fmt.Sprintf("... and %d more errors", len(all)-maxErrors)})
			break
		}
		fe.File = name
		out = append(out, fe)
	}
	return out
}

// fileError is an ErrorList holding one error about the whole file.
func fileError(file, format string, args ...any) error {
	return ErrorList{{File: DisplayName(file), Detail: fmt.Sprintf(format, args...)}}
}
