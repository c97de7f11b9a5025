package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/config"
)

// The CLI reference, docs/cli/podhost*.md, is generated from the cobra
// commands (spf13/cobra/doc) and must match them: a flag or command added,
// renamed or reworded without regenerating fails here.
//
//	make docs   (PODHOST_UPDATE_DOCS=1 go test ./cmd/podhost -run TestCLIReference)
//	make man    (PODHOST_MAN_DIR=DIR go test ./cmd/podhost -run TestManPages: man pages into DIR)
const cliDocDir = "../../docs/cli"

// docRoot is podhost's command tree as a user gets it (with cobra's
// completion command), without cobra's generation-date tag.
func docRoot() *cobra.Command {
	g := &globalOptions{streams: cmdutil.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}, flags: config.Default()}
	root := newRootCmd(g)
	root.InitDefaultCompletionCmd()
	root.DisableAutoGenTag = true
	return root
}

// genMarkdown renders the reference: file name → content.
func genMarkdown(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	if err := doc.GenMarkdownTree(docRoot(), dir); err != nil {
		t.Fatal(err)
	}
	return readPages(t, dir)
}

// readPages reads the reference pages of dir (podhost*.md; other files,
// such as README.md, are written by hand).
func readPages(t *testing.T, dir string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "podhost*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = string(b)
	}
	return out
}

func TestCLIReference(t *testing.T) {
	want := genMarkdown(t)
	got := readPages(t, cliDocDir)
	if os.Getenv("PODHOST_UPDATE_DOCS") != "" {
		for name := range got {
			if _, ok := want[name]; !ok {
				if err := os.Remove(filepath.Join(cliDocDir, name)); err != nil {
					t.Fatal(err)
				}
			}
		}
		for name, content := range want {
			if err := os.WriteFile(filepath.Join(cliDocDir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	var names []string
	for name := range want {
		names = append(names, name)
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if got[name] != want[name] {
			t.Errorf("docs/cli/%s does not match the commands (run make docs):\n%s", name, lineDiff(got[name], want[name]))
		}
	}
}

// lineDiff shows the first line where got and want differ.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  committed: %s\n  commands:  %s", i+1, gl, wl)
		}
	}
	return ""
}

// Man pages, for a package or an appliance image: generated on demand
// (PODHOST_MAN_DIR), not committed; without it this only checks that they
// render.
func TestManPages(t *testing.T) {
	dir := os.Getenv("PODHOST_MAN_DIR")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	header := &doc.GenManHeader{Section: "1", Source: "podhost", Manual: "podhost manual"} // dated now, or SOURCE_DATE_EPOCH
	if err := doc.GenManTree(docRoot(), header, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "podhost-apply.1")); err != nil {
		t.Fatal(err)
	}
}
