//go:build ignore

// Helpers of move-wings.go: text edits at parser positions, imports.

package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func fail(msg string) { fmt.Fprintln(os.Stderr, "move-wings.go:", msg); os.Exit(1) }

type edit struct {
	start, end int
	text       string
}

func apply(src []byte, edits []edit) []byte {
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	out := slices.Clone(src)
	last := len(src) + 1
	for _, e := range edits {
		if e.end > last {
			fail(fmt.Sprintf("overlapping edits at %d", e.start))
		}
		out = append(out[:e.start:e.start], append([]byte(e.text), out[e.end:]...)...)
		last = e.start
	}
	return out
}

// lines widens [s,e) to whole lines when nothing else shares them.
func lines(src []byte, s, e int) (int, int) {
	ls := bytes.LastIndexByte(src[:s], '\n') + 1
	if len(bytes.TrimSpace(src[ls:s])) == 0 {
		s = ls
	}
	if i := bytes.IndexByte(src[e:], '\n'); i >= 0 && len(bytes.TrimSpace(src[e:e+i])) == 0 {
		e += i + 1
	}
	return s, e
}

type goFile struct {
	path string
	src  []byte
	fset *token.FileSet
	f    *ast.File
}

func parse(p string, src []byte) *goFile {
	if src == nil {
		var err error
		if src, err = os.ReadFile(p); err != nil {
			fail(err.Error())
		}
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p, src, parser.ParseComments)
	if err != nil {
		fail(err.Error())
	}
	return &goFile{p, src, fset, f}
}

func (g *goFile) off(p token.Pos) int { return g.fset.Position(p).Offset }

func write(p string, src []byte) {
	if err := os.WriteFile(p, src, 0o644); err != nil {
		fail(err.Error())
	}
}

// dirFiles: the .go files of dir (tests too if tests); own: only those of
// its package proper (not the external _test package).
func dirFiles(dir string, tests, own bool) []*goFile {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []*goFile
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || (!tests && strings.HasSuffix(n, "_test.go")) {
			continue
		}
		g := parse(filepath.Join(dir, n), nil)
		if own && strings.HasSuffix(g.f.Name.Name, "_test") {
			continue
		}
		out = append(out, g)
	}
	return out
}

// declared: the top-level names of dir's package (non-test files), and its name.
func declared(dir string) (map[string]bool, string) {
	m, name := map[string]bool{}, ""
	for _, g := range dirFiles(dir, false, true) {
		name = g.f.Name.Name
		for _, d := range g.f.Decls {
			for _, n := range declNames(d) {
				m[n] = true
			}
		}
	}
	return m, name
}

func declNames(d ast.Decl) []string {
	var out []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			out = append(out, d.Name.Name)
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				out = append(out, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					out = append(out, n.Name)
				}
			}
		}
	}
	return out
}

var modPath = func() string {
	b, err := os.ReadFile("go.mod")
	if err != nil {
		fail("run from the module root: " + err.Error())
	}
	return string(regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(b)[1])
}()

func importPath(dir string) string { return path.Join(modPath, filepath.ToSlash(filepath.Clean(dir))) }

func specPath(s *ast.ImportSpec) string { p, _ := strconv.Unquote(s.Path.Value); return p }

// localName: what a file calls an import (its alias, else a guess from the path).
func localName(s *ast.ImportSpec) string {
	if s.Name != nil {
		return s.Name.Name
	}
	el := strings.Split(specPath(s), "/")
	n := el[len(el)-1]
	if regexp.MustCompile(`^v[0-9]+$`).MatchString(n) && len(el) > 1 {
		n = el[len(el)-2]
	}
	return strings.TrimPrefix(regexp.MustCompile(`\.v[0-9]+$`).ReplaceAllString(n, ""), "go-")
}

// pkgRefs: the X of every X.Sel where X names no declaration in the file.
func pkgRefs(f *ast.File) map[string]bool {
	m := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok && id.Obj == nil {
				m[id.Name] = true
			}
		}
		return true
	})
	return m
}

// shadowed reports whether, in src, a reference name.X (X in names) would
// not name the package: a declaration in scope, in the package, or another
// import of that name.
func shadowed(p string, src []byte, name, ipath string, names map[string]bool) bool {
	g := parse(p, src)
	for _, s := range g.f.Imports {
		if specPath(s) != ipath && localName(s) == name {
			return true
		}
	}
	for _, o := range dirFiles(filepath.Dir(p), true, false) { // the package's other files
		if o.f.Name.Name == g.f.Name.Name && filepath.Base(o.path) != filepath.Base(p) {
			for _, d := range o.f.Decls {
				if slices.Contains(declNames(d), name) {
					return true
				}
			}
		}
	}
	for _, d := range g.f.Decls {
		if slices.Contains(declNames(d), name) {
			return true
		}
	}
	found := false
	ast.Inspect(g.f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok && id.Name == name && id.Obj != nil && (names[s.Sel.Name] || slices.Contains(slices.Collect(maps.Values(renamed)), s.Sel.Name)) {
				found = true
			}
		}
		return true
	})
	return found
}

// importEdit: the edit adding `alias "path"`, next to the module's own imports.
func importEdit(g *goFile, ipath, alias string) []edit {
	var after *ast.ImportSpec
	for _, s := range g.f.Imports {
		if specPath(s) == ipath {
			return nil
		}
		if strings.HasPrefix(specPath(s), modPath+"/") {
			after = s
		}
	}
	line := strconv.Quote(ipath)
	if alias != "" {
		line = alias + " " + line
	}
	for _, d := range g.f.Decls {
		d, ok := d.(*ast.GenDecl)
		if !ok || d.Tok != token.IMPORT {
			continue
		}
		if after == nil && d.Lparen.IsValid() { // a group of its own, last
			o, _ := lines(g.src, g.off(d.Rparen), g.off(d.Rparen))
			return []edit{{o, o, "\n\t" + line + "\n"}}
		}
		if after != nil && slices.Contains(d.Specs, ast.Spec(after)) {
			o := g.off(after.End())
			if d.Lparen.IsValid() {
				return []edit{{o, o, "\n\t" + line}}
			}
			return []edit{{o, o, "\nimport " + line}}
		}
		if after == nil {
			o := g.off(d.End())
			return []edit{{o, o, "\nimport " + line}}
		}
	}
	o := g.off(g.f.Name.End())
	return []edit{{o, o, "\n\nimport " + line}}
}

// dropUnused removes the imports of paths in cand that nothing refers to any more.
func dropUnused(p string, src []byte, cand map[string]bool) []byte {
	g := parse(p, src)
	refs := pkgRefs(g.f)
	var edits []edit
	for _, d := range g.f.Decls {
		d, ok := d.(*ast.GenDecl)
		if !ok || d.Tok != token.IMPORT {
			continue
		}
		var dead []ast.Spec
		for _, s := range d.Specs {
			n := localName(s.(*ast.ImportSpec))
			if cand[specPath(s.(*ast.ImportSpec))] && n != "_" && n != "." && !refs[n] {
				dead = append(dead, s)
			}
		}
		if len(dead) > 0 && len(dead) == len(d.Specs) {
			s, e := lines(g.src, g.off(d.Pos()), g.off(d.End()))
			edits = append(edits, edit{s, e, ""})
			continue
		}
		for _, s := range dead {
			st, e := lines(g.src, g.off(s.Pos()), g.off(s.End()))
			edits = append(edits, edit{st, e, ""})
		}
	}
	return apply(src, edits)
}

// importBlock: an import decl of specs, standard library first.
func importBlock(specs []string) string {
	var std, other []string
	for _, s := range specs {
		p := s[strings.IndexByte(s, '"')+1:]
		if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			other = append(other, s)
		} else {
			std = append(std, s)
		}
	}
	sort.Strings(std)
	sort.Strings(other)
	groups := []string{}
	for _, g := range [][]string{std, other} {
		if len(g) > 0 {
			groups = append(groups, "\t"+strings.Join(g, "\n\t"))
		}
	}
	return "\n\nimport (\n" + strings.Join(groups, "\n\n") + "\n)"
}
