//go:build ignore

// qualify, requalify and relpaths of move-wings.go.

package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// moved: the exported names of target's package that dir's does not declare.
func moved(dir, target string) (map[string]bool, string) {
	have, _ := declared(dir)
	names, tname := declared(target)
	for n := range names {
		if have[n] || !ast.IsExported(n) {
			delete(names, n)
		}
	}
	for o, n := range renamed {
		if names[n] && !have[o] {
			names[o] = true
		}
	}
	return names, tname
}

// rewrite applies edits(local) with local = name, or name+"pkg" imported
// under that alias when name would be shadowed.
func rewrite(g *goFile, name, ipath string, names map[string]bool, edits func(local string) []edit, after func([]byte) []byte) {
	local, alias := name, ""
	out := apply(g.src, append(edits(local), importEdit(g, ipath, "")...))
	if shadowed(g.path, out, name, ipath, names) {
		local, alias = name+"pkg", name+"pkg"
		out = apply(g.src, append(edits(local), importEdit(g, ipath, alias)...))
		fmt.Fprintf(os.Stderr, "move-wings.go: %s: %s would be shadowed: imported as %s\n", g.path, name, alias)
	}
	write(g.path, after(out))
}

func qualify(dir, target string) {
	names, tname := moved(dir, target)
	tpath := importPath(target)
	fields := structFields(target)
	for _, g := range dirFiles(dir, true, true) {
		skip := map[*ast.Ident]bool{}
		ast.Inspect(g.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				skip[n.Sel] = true
			case *ast.CompositeLit: // struct keys are field names; map keys are values
				if _, isMap := n.Type.(*ast.MapType); !isMap {
					for _, e := range n.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok {
							if id, ok := kv.Key.(*ast.Ident); ok {
								skip[id] = true
							}
						}
					}
				}
			case *ast.Field:
				for _, id := range n.Names {
					skip[id] = true
				}
			}
			return true
		})
		var at []*ast.Ident
		ast.Inspect(g.f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Obj == nil && names[id.Name] && !skip[id] {
				at = append(at, id)
			}
			return true
		})
		if len(at) == 0 {
			continue
		}
		keyed := keyFields(g, fields, names)
		rewrite(g, tname, tpath, names, func(local string) []edit {
			e := slices.Clone(keyed)
			for _, id := range at {
				e = append(e, edit{g.off(id.Pos()), g.off(id.End()), local + "." + newName(id.Name)})
			}
			return e
		}, func(b []byte) []byte { return b })
	}
}

func requalify(from, to, fromName string) {
	fpath, tpath := importPath(from), importPath(to)
	var names map[string]bool
	var tname string
	if from == to {
		if fromName == "" {
			fail("requalify: -from-name is required when -from and -to are the same")
		}
		names, tname = declared(to)
	} else {
		names, tname = moved(from, to)
	}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(src), strconv.Quote(fpath)) {
			return err
		}
		requalifyFile(parse(p, src), fpath, tpath, fromName, tname, names)
		return nil
	})
	if err != nil {
		fail(err.Error())
	}
}

func requalifyFile(g *goFile, fpath, tpath, fromName, tname string, names map[string]bool) {
	old := ""
	for _, s := range g.f.Imports {
		if specPath(s) == fpath {
			old = localName(s)
			if s.Name == nil && fromName != "" {
				old = fromName
			}
		}
	}
	if old == "" || old == "_" || old == "." || (fpath == tpath && old == tname) {
		return
	}
	var at []*ast.SelectorExpr
	ast.Inspect(g.f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok && id.Obj == nil && id.Name == old && names[s.Sel.Name] {
				at = append(at, s)
			}
		}
		return true
	})
	if len(at) == 0 {
		return
	}
	edits := func(local string) []edit {
		var e []edit
		for _, s := range at {
			e = append(e, edit{g.off(s.Pos()), g.off(s.End()), local + "." + newName(s.Sel.Name)})
		}
		return e
	}
	if fpath == tpath { // a renamed package clause: the import stays as it is
		write(g.path, apply(g.src, edits(tname)))
		return
	}
	rewrite(g, tname, tpath, names, edits, func(b []byte) []byte {
		return dropUnused(g.path, b, map[string]bool{fpath: true})
	})
}

// structFields: the field names, in order, of target's struct types.
func structFields(target string) map[string][]string {
	out := map[string][]string{}
	for _, g := range dirFiles(target, false, true) {
		ast.Inspect(g.f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				var fs []string
				for _, f := range st.Fields.List {
					for _, id := range f.Names {
						fs = append(fs, id.Name)
					}
					if len(f.Names) == 0 { // embedded: T, *T, pkg.T
						t := f.Type
						if s, ok := t.(*ast.StarExpr); ok {
							t = s.X
						}
						if s, ok := t.(*ast.SelectorExpr); ok {
							t = s.Sel
						}
						fs = append(fs, t.(*ast.Ident).Name)
					}
				}
				out[ts.Name.Name] = fs
			}
			return false
		})
	}
	return out
}

// keyFields: edits adding the field names to unkeyed literals of the moved
// struct types (go vet wants them keyed once the type is another package's).
func keyFields(g *goFile, fields map[string][]string, names map[string]bool) []edit {
	moved := func(t ast.Expr) string {
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
		}
		if id, ok := t.(*ast.Ident); ok && id.Obj == nil && names[id.Name] {
			return id.Name
		}
		return ""
	}
	var edits []edit
	seen := map[*ast.CompositeLit]bool{}
	var visit func(lit *ast.CompositeLit, typ string)
	visit = func(lit *ast.CompositeLit, typ string) {
		seen[lit] = true
		var elem string
		switch t := lit.Type.(type) {
		case *ast.ArrayType:
			elem = moved(t.Elt)
		case *ast.MapType:
			elem = moved(t.Value)
		case nil:
		default:
			typ = moved(t)
		}
		fs, keyed := fields[typ], false
		for _, e := range lit.Elts {
			_, kv := e.(*ast.KeyValueExpr)
			keyed = keyed || kv
		}
		for i, e := range lit.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				e = kv.Value
			} else if typ != "" && !keyed && i < len(fs) && len(lit.Elts) == len(fs) {
				o := g.off(e.Pos())
				edits = append(edits, edit{o, o, fs[i] + ": "})
			}
			if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
				e = u.X
			}
			if c, ok := e.(*ast.CompositeLit); ok {
				visit(c, elem)
			}
		}
	}
	ast.Inspect(g.f, func(n ast.Node) bool {
		if c, ok := n.(*ast.CompositeLit); ok && !seen[c] {
			visit(c, "")
		}
		return true
	})
	return edits
}

func relpaths(from, to string) {
	filepath.WalkDir(to, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		rel, _ := filepath.Rel(to, filepath.Dir(p))
		old, dir := filepath.Join(from, rel), filepath.Dir(p)
		inRepo := func(r string) bool { return r != ".." && !strings.HasPrefix(r, "../") && !filepath.IsAbs(r) }
		g := parse(p, nil)
		var edits []edit
		ast.Inspect(g.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				v, err := strconv.Unquote(n.Value)
				if n.Kind != token.STRING || err != nil || !strings.HasPrefix(v, "../") {
					return true
				}
				r := filepath.Clean(filepath.Join(old, v))
				name := strings.TrimLeft(v, "./")
				if _, err := os.Stat(r); err != nil || name == "" || !inRepo(r) || strings.HasPrefix(r+"/", old+"/") || strings.HasPrefix(old+"/", r+"/") {
					return true
				}
				nv, _ := filepath.Rel(dir, r)
				if nv != v {
					edits = append(edits, edit{g.off(n.Pos()), g.off(n.End()), strconv.Quote(filepath.ToSlash(nv))})
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Join" {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || (x.Name != "filepath" && x.Name != "path") {
					return true
				}
				k := 0
				for _, a := range n.Args {
					if l, ok := a.(*ast.BasicLit); ok && l.Value == `".."` {
						k++
						continue
					}
					break
				}
				if k == 0 {
					return true
				}
				r := filepath.Clean(old + strings.Repeat("/..", k))
				if !inRepo(r) {
					return true
				}
				nv, _ := filepath.Rel(dir, r)
				var q []string
				for _, part := range strings.Split(filepath.ToSlash(nv), "/") {
					q = append(q, strconv.Quote(part))
				}
				if len(q) != k || slices.ContainsFunc(q, func(s string) bool { return s != `".."` }) {
					edits = append(edits, edit{g.off(n.Args[0].Pos()), g.off(n.Args[k-1].End()), strings.Join(q, ", ")})
				}
			}
			return true
		})
		if len(edits) > 0 {
			write(p, apply(g.src, edits))
			fmt.Fprintf(os.Stderr, "move-wings.go: %s: %d relative paths adjusted\n", p, len(edits))
		}
		return nil
	})
}
