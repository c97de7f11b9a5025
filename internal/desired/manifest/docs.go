package manifest

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

var utf8BOM = []byte("\xef\xbb\xbf")

// doc is one non-empty document of a file.
type doc struct {
	raw    []byte      // the document's bytes, without its separator line
	line   int         // 1-based line of raw's first byte in the file
	budget *byteBudget // the file's expanded-bytes budget, shared by its documents
}

// Docs splits a manifest file into its documents, in order, skipping empty
// ones (only blank lines and comments). The returned slices alias data (with
// their capacity clipped, so appending to one never overwrites the next) and
// contain the documents' text exactly, without the separator lines, so a
// caller can rewrite one document and join them again with "---\n".
//
// Separators follow YAML: a line that starts with "---" or "..." followed by
// nothing, whitespace or a comment. "--- content" starts a document whose
// first line is kept. Documents are numbered in Decode's errors ("[doc 2]")
// by their index here, plus one.
//
// Docs rejects input Decode would reject as a whole: larger than
// MaxFileSize, invalid UTF-8 or binary data.
func Docs(data []byte) ([][]byte, error) {
	if err := checkInput(data); err != nil {
		return nil, err
	}
	docs := splitDocs(data)
	out := make([][]byte, len(docs))
	for i, d := range docs {
		out[i] = d.raw
	}
	return out, nil
}

// checkInput rejects data that cannot be a text manifest.
func checkInput(data []byte) error {
	if len(data) > MaxFileSize {
		return fmt.Errorf("file is %d bytes, more than the %d-byte limit for a manifest", len(data), MaxFileSize)
	}
	for i, c := range data {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			line, col := lineCol(data, i)
			return fmt.Errorf("binary data (control character 0x%02x at line %d, column %d): not a YAML or JSON manifest", c, line, col)
		}
	}
	if !utf8.Valid(data) {
		off := invalidUTF8Offset(data)
		line, col := lineCol(data, off)
		return fmt.Errorf("invalid UTF-8 at line %d, column %d (byte offset %d): manifests must be UTF-8 text", line, col, off)
	}
	return nil
}

func invalidUTF8Offset(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(data)
}

// lineCol returns the 1-based line and column (in bytes) of offset off.
func lineCol(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// splitDocs is Docs without the input checks.
func splitDocs(data []byte) []doc {
	data = bytes.TrimPrefix(data, utf8BOM)
	budget := newByteBudget(len(data))
	var docs []doc
	start, startLine := 0, 1
	flush := func(end int) {
		raw := data[start:end:end]
		if !isEmptyDoc(raw) {
			docs = append(docs, doc{raw: raw, line: startLine, budget: budget})
		}
	}
	for off, line := 0, 1; off < len(data); line++ {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += off + 1
		}
		if sep, keep := separator(data[off:end]); sep {
			flush(off)
			start, startLine = end, line+1
			if keep {
				start, startLine = off, line
			}
		}
		off = end
	}
	flush(len(data))
	return docs
}

// separator reports whether line is a document marker ("---" or "...") and
// whether the line also carries content that belongs to the next document.
func separator(line []byte) (sep, keep bool) {
	if len(line) < 3 {
		return false, false
	}
	marker := string(line[:3])
	if marker != "---" && marker != "..." {
		return false, false
	}
	rest := line[3:]
	if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\r' && rest[0] != '\n' {
		return false, false
	}
	rest = bytes.TrimSpace(rest)
	if len(rest) == 0 || rest[0] == '#' {
		return true, false
	}
	// "--- value" starts a document on the same line; "... x" is not valid
	// YAML: leave it in the document for the parser to report.
	if marker == "..." {
		return false, false
	}
	return true, true
}

// isEmptyDoc reports whether raw holds only blank lines and comments.
func isEmptyDoc(raw []byte) bool {
	for len(raw) > 0 {
		var line []byte
		line, raw, _ = bytes.Cut(raw, []byte("\n"))
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' {
			return false
		}
	}
	return true
}
