//go:build ignore

// move-wings.go is the syntax-aware half of scripts/dev/move-wings.sh (with
// move-wings-lib.go): it moves declarations between packages and rewrites the
// identifiers that name them, by editing the source text at the positions
// go/parser reports, so comments and layout are kept (gofmt runs
// afterwards). Standard library only. Every command is idempotent.
//
//	move      -from DIR -to DIR2 -pkg NAME -file F.go [-names A,B] [-prefix S] [-doc TEXT]
//	          moves the top-level funcs, types, consts and vars named A,B
//	          (and the string consts whose value starts with S) out of DIR's
//	          non-test files into DIR2/F.go, in the order of -names.
//	qualify   -dir DIR -target DIR2
//	          in DIR's package (its tests too), Name → pkg2.Name for every
//	          exported top-level Name of DIR2 that DIR does not declare.
//	requalify -from DIR -to DIR2 [-from-name OLD]
//	          in every .go file importing DIR, dir.Name → pkg2.Name for
//	          those names, adding and dropping imports to match. With DIR2 ==
//	          DIR and -from-name: the package clause was renamed from OLD.
//	relpaths  -from DIR -to DIR2
//	          DIR moved to DIR2: in DIR2's .go files (and below), string
//	          literals "../x" naming a file of the repo from DIR, and the
//	          leading ".." arguments of filepath.Join/path.Join, are made
//	          relative to DIR2. What does not resolve inside the repo from
//	          DIR (already adjusted, or test data) is left alone.
//
// -renames Old=New (move, qualify, requalify): the declaration Old is
// renamed New on its way (its doc comment too), and so are its references.
//
// A file where the new package name would be shadowed (a local variable
// named like it, say) imports it under the name pkg2+"pkg" instead, and says so.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: move-wings.go move|qualify|requalify [flags]")
	}
	fl := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	from := fl.String("from", "", "source package dir")
	to := fl.String("to", "", "target package dir")
	dir := fl.String("dir", "", "package dir to qualify")
	target := fl.String("target", "", "package dir whose names are qualified")
	pkg := fl.String("pkg", "", "target package name")
	file := fl.String("file", "", "target file name")
	names := fl.String("names", "", "comma-separated names")
	prefix := fl.String("prefix", "", "move string consts with this value prefix")
	doc := fl.String("doc", "", "package doc comment of a new target file")
	fromName := fl.String("from-name", "", "the source package's former name")
	renames := fl.String("renames", "", "Old=New,...: declarations renamed as they move")
	fl.Parse(os.Args[2:])
	for _, r := range strings.Split(*renames, ",") {
		if o, n, ok := strings.Cut(r, "="); ok {
			renamed[o] = n
		}
	}
	switch os.Args[1] {
	case "move":
		var order []string
		for _, n := range strings.Split(*names, ",") {
			if n = strings.TrimSpace(n); n != "" {
				order = append(order, n)
			}
		}
		move(*from, *to, *pkg, *file, order, *prefix, *doc)
	case "qualify":
		qualify(*dir, *target)
	case "requalify":
		requalify(*from, *to, *fromName)
	case "relpaths":
		relpaths(*from, *to)
	default:
		fail("unknown command " + os.Args[1])
	}
}

var renamed = map[string]string{} // -renames

// newName: what a moved declaration is called in its new package.
func newName(n string) string {
	if r, ok := renamed[n]; ok {
		return r
	}
	return n
}

type piece struct {
	rank int // index in -names of its first name; prefix matches: after them
	text string
}

func move(from, to, pkg, file string, order []string, prefix, doc string) {
	if from == "" || to == "" || pkg == "" || file == "" {
		fail("move: -from, -to, -pkg and -file are required")
	}
	rank := func(ns []string) int {
		r := -1 // matched by prefix only: source order, first
		for _, n := range ns {
			if i := slices.Index(order, n); i >= 0 && (r < 0 || i < r) {
				r = i
			}
		}
		return r
	}
	wants := func(s ast.Spec, tok token.Token) bool {
		switch s := s.(type) {
		case *ast.TypeSpec:
			return slices.Contains(order, s.Name.Name)
		case *ast.ValueSpec:
			for i, n := range s.Names {
				str := ""
				if i < len(s.Values) {
					if lit, ok := s.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						str, _ = strconv.Unquote(lit.Value)
					}
				}
				byPrefix := prefix != "" && tok == token.CONST && strings.HasPrefix(str, prefix)
				if !slices.Contains(order, n.Name) && !byPrefix {
					return false
				}
			}
			return len(s.Names) > 0
		}
		return false
	}
	var pieces []piece
	imports := map[string]string{} // local name → import spec, from the source files
	for _, g := range dirFiles(from, false, true) {
		var edits []edit
		var moved []piece
		start := func(n ast.Node, doc *ast.CommentGroup) int {
			if doc != nil {
				return g.off(doc.Pos())
			}
			return g.off(n.Pos())
		}
		whole := func(d ast.Decl, doc *ast.CommentGroup) {
			s, e := lines(g.src, start(d, doc), g.off(d.End()))
			moved = append(moved, piece{rank(declNames(d)), string(g.src[s:e])})
			edits = append(edits, edit{s, e, ""})
		}
		for _, d := range g.f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && slices.Contains(order, d.Name.Name) {
					whole(d, d.Doc)
				}
			case *ast.GenDecl:
				if d.Tok == token.IMPORT {
					continue
				}
				var take []ast.Spec
				for _, s := range d.Specs {
					if wants(s, d.Tok) {
						take = append(take, s)
					}
				}
				switch {
				case len(take) == 0:
				case len(take) == len(d.Specs):
					whole(d, d.Doc)
				default:
					if d.Tok == token.CONST && iotaGroup(d) {
						fail(g.path + ": will not split a const group that uses iota")
					}
					group := d.Tok.String() + " (\n"
					var ns []string
					for _, sp := range take {
						var sd *ast.CommentGroup
						end := g.off(sp.End())
						switch sp := sp.(type) {
						case *ast.ValueSpec:
							sd = sp.Doc
							if sp.Comment != nil {
								end = g.off(sp.Comment.End())
							}
							for _, n := range sp.Names {
								ns = append(ns, n.Name)
							}
						case *ast.TypeSpec:
							sd = sp.Doc
							ns = append(ns, sp.Name.Name)
						}
						s, e := lines(g.src, start(sp, sd), end)
						group += string(g.src[s:e])
						edits = append(edits, edit{s, e, ""})
					}
					moved = append(moved, piece{rank(ns), group + ")\n"})
				}
			}
		}
		if len(edits) == 0 {
			continue
		}
		cand := map[string]bool{}
		for _, s := range g.f.Imports {
			n := localName(s)
			imports[n] = string(g.src[g.off(s.Pos()):g.off(s.End())])
			for _, m := range moved {
				if strings.Contains(m.text, n+".") {
					cand[specPath(s)] = true
				}
			}
		}
		pieces = append(pieces, moved...)
		out := dropUnused(g.path, apply(g.src, edits), cand)
		if rest := parse(g.path, out); len(rest.f.Decls) == 0 && rest.f.Doc == nil {
			os.Remove(g.path)
		} else {
			write(g.path, out)
		}
		fmt.Fprintf(os.Stderr, "move-wings.go: moved %d declarations from %s to %s\n", len(moved), g.path, to)
	}
	if len(pieces) == 0 {
		return
	}
	slices.SortStableFunc(pieces, func(a, b piece) int { return a.rank - b.rank })
	if err := os.MkdirAll(to, 0o755); err != nil {
		fail(err.Error())
	}
	target := filepath.Join(to, file)
	src, err := os.ReadFile(target)
	if err != nil {
		if doc != "" {
			src = []byte("// " + strings.ReplaceAll(doc, "\n", "\n// ") + "\n")
		}
		src = append(src, "package "+pkg+"\n"...)
	}
	for _, p := range pieces {
		for o, n := range renamed {
			p.text = regexp.MustCompile(`\b`+o+`\b`).ReplaceAllString(p.text, n)
		}
		src = append(src, "\n"+strings.TrimRight(p.text, "\n")+"\n"...)
	}
	g := parse(target, src)
	var add []string
	for n := range pkgRefs(g.f) {
		if spec, ok := imports[n]; ok && !slices.ContainsFunc(g.f.Imports, func(s *ast.ImportSpec) bool { return localName(s) == n }) {
			add = append(add, spec)
		}
	}
	if len(add) > 0 {
		o := g.off(g.f.Name.End())
		src = apply(src, []edit{{o, o, importBlock(add)}})
	}
	write(target, src)
}

func iotaGroup(d *ast.GenDecl) bool {
	found := false
	ast.Inspect(d, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == "iota" {
			found = true
		}
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Values) == 0 {
			found = true
		}
		return true
	})
	return found
}
