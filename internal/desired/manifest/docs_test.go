package manifest

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestDocs(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"single", "a: 1\n", []string{"a: 1\n"}},
		{"no trailing newline", "a: 1", []string{"a: 1"}},
		{"two", "a: 1\n---\nb: 2\n", []string{"a: 1\n", "b: 2\n"}},
		{"leading and trailing separators", "---\na: 1\n---\n", []string{"a: 1\n"}},
		{"empty and comment-only docs skipped", "---\n\n---\n# c\n  # d\n---\na: 1\n", []string{"a: 1\n"}},
		{"separator with comment", "a: 1\n--- # next\nb: 2\n", []string{"a: 1\n", "b: 2\n"}},
		{"separator with trailing spaces and CRLF", "a: 1\r\n---  \r\nb: 2\r\n", []string{"a: 1\r\n", "b: 2\r\n"}},
		{"inline document start keeps the line", "a: 1\n--- {b: 2}\n", []string{"a: 1\n", "--- {b: 2}\n"}},
		{"document end marker", "a: 1\n...\nb: 2\n", []string{"a: 1\n", "b: 2\n"}},
		{"not separators", "a: |\n  ---\n----\n---x\n", []string{"a: |\n  ---\n----\n---x\n"}},
		{"... with content stays for the parser", "a: 1\n... x\n", []string{"a: 1\n... x\n"}},
		{"BOM", "\xef\xbb\xbfa: 1\n", []string{"a: 1\n"}},
		{"JSON", `{"a": 1}`, []string{`{"a": 1}`}},
		{"nothing", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Docs([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range docs {
				got = append(got, string(d))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Docs(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestDocsLines(t *testing.T) {
	docs := splitDocs([]byte("---\na: 1\n\n---\n# c\nb: 2\n--- {c: 3}\n"))
	var lines []int
	for _, d := range docs {
		lines = append(lines, d.line)
	}
	if want := []int{2, 5, 7}; !reflect.DeepEqual(lines, want) {
		t.Errorf("lines = %v, want %v", lines, want)
	}
}

func TestDocsAreClipped(t *testing.T) {
	data := []byte("a: 1\n---\nb: 2\n")
	docs, err := Docs(data)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(docs[0], "XXXXXXXX"...)
	if !bytes.Equal(data, []byte("a: 1\n---\nb: 2\n")) {
		t.Errorf("appending to a doc overwrote the input: %q", data)
	}
}

// TestDocsRoundTrip: rewriting one document and joining them again with
// "---\n" (what `podhost apply` does) keeps the other documents intact.
func TestDocsRoundTrip(t *testing.T) {
	data := podDocNamed("a") + "---\n" + podDocNamed("b") + "---\n" + podDocNamed("c")
	docs, err := Docs([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	docs[1] = []byte(strings.Replace(string(docs[1]), "busybox:1.36", "busybox:1.37", 1))
	joined := bytes.Join(docs, []byte("---\n"))
	pods := mustDecodeString(t, "x.yaml", string(joined))
	if len(pods) != 3 || pods[1].Spec.Containers[0].Image != "busybox:1.37" || pods[2].Name != "c" {
		t.Errorf("round trip: %+v", pods)
	}
}

func TestDocsRejectsBadInput(t *testing.T) {
	for _, in := range [][]byte{make([]byte, MaxFileSize+1), []byte("a\x00"), []byte("\xff")} {
		if _, err := Docs(in); err == nil {
			t.Errorf("Docs(%q...) succeeded", in[:min(len(in), 8)])
		}
	}
}
