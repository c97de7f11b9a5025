package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// docs/ARCHITECTURE.md names Go identifiers in two ways, and both must
// exist: qualified references anywhere in the text (`manifest.Decode`,
// `status.Manager.Revision`, `records.Allocation.Containers`: a package,
// then a top-level name, then a method or field), and the declarations in
// each section's code blocks (`func Decode(`, `type Object struct`,
// `(c) Run(ctx, ...)`: names declared by the section's packages, named by
// its heading). Only podhost's own packages are checked, and the standard
// library's that share a name with one (`runtime.Stack`); corev1.Pod and
// the like are left to the compiler of the code that uses them.
const architectureDoc = "../../docs/ARCHITECTURE.md"

// decls is what a package declares: top-level names ("Decode"), and
// methods, fields and interface methods as "Type.Name".
type decls map[string]bool

// parseDir collects the declarations of the Go files of dir (tests aside,
// every build tag included).
func parseDir(dir string) (name string, d decls, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, err
	}
	d = decls{}
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return "", nil, err
		}
		name = f.Name.Name
		addDecls(d, f)
	}
	return name, d, nil
}

func addDecls(d decls, f *ast.File) {
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv == nil || len(decl.Recv.List) == 0 {
				d[decl.Name.Name] = true
				continue
			}
			d[recvType(decl.Recv.List[0].Type)+"."+decl.Name.Name] = true
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					d[spec.Name.Name] = true
					addMembers(d, spec.Name.Name, spec.Type)
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						d[n.Name] = true
					}
				}
			}
		}
	}
}

// addMembers records a struct's fields (embedded ones by their type name)
// and an interface's methods.
func addMembers(d decls, typ string, t ast.Expr) {
	var fields *ast.FieldList
	switch t := t.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	default:
		return
	}
	for _, f := range fields.List {
		for _, n := range f.Names {
			d[typ+"."+n.Name] = true
		}
		if len(f.Names) == 0 {
			d[typ+"."+recvType(f.Type)] = true
		}
	}
}

// recvType is the name of a receiver or embedded type: T, *T, T[K], pkg.T.
func recvType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvType(e.X)
	case *ast.IndexExpr:
		return recvType(e.X)
	case *ast.IndexListExpr:
		return recvType(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// modulePackages: package name → declarations, for every package under
// internal/ and cmd/ (names are unique there, main aside).
func modulePackages(t *testing.T) map[string]decls {
	t.Helper()
	out := map[string]decls{}
	for _, root := range []string{"../../internal", "../../cmd"} {
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return err
			}
			name, d, err := parseDir(p)
			if err != nil {
				return err
			}
			if name != "" && name != "main" {
				if out[name] != nil {
					return fmt.Errorf("two packages named %s: the doc's references would be ambiguous", name)
				}
				out[name] = d
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// stdDecls: the declarations of the standard library package of that name
// (nil if there is none), for names a podhost package shares.
func stdDecls(name string) decls {
	_, d, err := parseDir(filepath.Join(goroot(), "src", name))
	if err != nil {
		return nil
	}
	return d
}

var (
	// qualified: pkg.Name or pkg.Type.Member.
	qualified = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9_]*)(?:\.([A-Z][A-Za-z0-9_]*))?`)
	// member: Type.Member without a package (Runtime.UpdateContainerResources).
	member = regexp.MustCompile(`(?:^|[^\w.])([A-Z][A-Za-z0-9]*)\.([A-Z][A-Za-z0-9_]*)\b`)
	// structDecl: a one-line struct type, whose fields are checked too.
	structDecl = regexp.MustCompile(`\btype ([A-Z][A-Za-z0-9_]*) struct ?\{(.*)\}`)
	comment    = regexp.MustCompile(`/\*.*?\*/`)
	quoted     = regexp.MustCompile(`"[^"\n]*"`)
	fieldNames = regexp.MustCompile(`^\*?[A-Z]\w*(?:, [A-Z]\w*)*`)
	// declared: what a line of a code block declares.
	declFunc   = regexp.MustCompile(`^\s*func ([A-Z][A-Za-z0-9_]*)[\[(]`)
	declType   = regexp.MustCompile(`\btype ([A-Z][A-Za-z0-9_]*)\b`)
	declValue  = regexp.MustCompile(`^\s*(?:const|var) ((?:[A-Z][A-Za-z0-9_]*(?:, )?)+)`)
	declMethod = regexp.MustCompile(`^\s*\(\w+\) (.*)`)
	methodName = regexp.MustCompile(`(?:^|; )([A-Z][A-Za-z0-9_]*)\(`)
)

// section is a "## " or "### " heading and its code-block lines.
type section struct {
	heading string
	code    []string
	line    int // of the heading
}

func readDoc(t *testing.T) (text string, sections []section) {
	t.Helper()
	data, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	inCode := false
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			inCode = !inCode
		case !inCode && (strings.HasPrefix(l, "## ") || strings.HasPrefix(l, "### ")):
			sections = append(sections, section{heading: strings.TrimLeft(l, "# "), line: i + 1})
		case inCode && len(sections) > 0:
			s := &sections[len(sections)-1]
			s.code = append(s.code, l)
		}
	}
	return string(data), sections
}

// headingPackages are the podhost packages a heading names: its words
// before any "(", split at commas, "+" and "and".
func headingPackages(h string, pkgs map[string]decls) []string {
	h, _, _ = strings.Cut(h, "(")
	var out []string
	for _, w := range strings.FieldsFunc(h, func(r rune) bool { return r == ',' || r == '+' || r == ' ' || r == '/' || r == '`' }) {
		if pkgs[w] != nil {
			out = append(out, w)
		}
	}
	return out
}

func TestArchitectureDocNames(t *testing.T) {
	pkgs := modulePackages(t)
	text, sections := readDoc(t)
	std := map[string]decls{}
	has := func(pkg, name string) bool {
		if pkgs[pkg][name] {
			return true
		}
		if _, ok := std[pkg]; !ok {
			std[pkg] = stdDecls(pkg)
		}
		return std[pkg][name]
	}
	seen := map[string]bool{}
	for _, m := range qualified.FindAllStringSubmatch(text, -1) {
		pkg, name, member := m[1], m[2], m[3]
		if seen[m[0]] {
			continue
		}
		seen[m[0]] = true
		if pkgs[pkg] == nil {
			continue // not a podhost package: corev1.Pod, types.UID, ...
		}
		switch {
		case !has(pkg, name):
			t.Errorf("docs/ARCHITECTURE.md names %s.%s: package %s has no %s", pkg, name, pkg, name)
		case member != "" && !has(pkg, name+"."+member):
			t.Errorf("docs/ARCHITECTURE.md names %s.%s.%s: %s.%s has no method or field %s", pkg, name, member, pkg, name, member)
		}
	}
	for _, m := range member.FindAllStringSubmatch(quoted.ReplaceAllString(text, `""`), -1) { // quoted: messages, not code
		if !anyDeclares(pkgs, m[1]+"."+m[2]) {
			t.Errorf("docs/ARCHITECTURE.md names %s.%s: no podhost type %s has a method or field %s", m[1], m[2], m[1], m[2])
		}
	}
	for _, s := range sections {
		owners := headingPackages(s.heading, pkgs)
		names := declaredNames(s.code)
		if len(names) > 0 && len(owners) == 0 {
			t.Errorf("docs/ARCHITECTURE.md:%d: %q declares %v but names no podhost package", s.line, s.heading, names)
			continue
		}
		for _, name := range names {
			if !slices.ContainsFunc(owners, func(p string) bool { return declares(pkgs[p], name) }) {
				t.Errorf("docs/ARCHITECTURE.md, %q: %s is declared by none of %v", s.heading, name, owners)
			}
		}
	}
}

// anyDeclares: some podhost package declares name (Type.Member).
func anyDeclares(pkgs map[string]decls, name string) bool {
	for _, d := range pkgs {
		if d[name] {
			return true
		}
	}
	return false
}

// declares: name is a top-level name of d, or (a method) a member of one
// of its types.
func declares(d decls, name string) bool {
	if d[name] {
		return true
	}
	if m, ok := strings.CutPrefix(name, "."); ok {
		for k := range d {
			if strings.HasSuffix(k, "."+m) {
				return true
			}
		}
	}
	return false
}

// declaredNames: the names a code block declares; methods (of an unnamed
// receiver, "(db) Close() error; Path() string") as ".Name".
func declaredNames(code []string) []string {
	var out []string
	for _, l := range code {
		l, _, _ = strings.Cut(l, "//")
		if m := declFunc.FindStringSubmatch(l); m != nil {
			out = append(out, m[1])
		}
		for _, m := range declType.FindAllStringSubmatch(l, -1) {
			out = append(out, m[1])
		}
		if m := declValue.FindStringSubmatch(l); m != nil {
			out = append(out, strings.Split(m[1], ", ")...)
		}
		if m := structDecl.FindStringSubmatch(l); m != nil {
			out = append(out, structFields(m[1], m[2])...)
		}
		if m := declMethod.FindStringSubmatch(l); m != nil {
			for _, mm := range methodName.FindAllStringSubmatch(m[1], -1) {
				out = append(out, "."+mm[1])
			}
		}
	}
	return out
}

// structFields: "Type.Field" for each field of a one-line struct body
// ("A, B string; C []T /* note */; Embedded").
func structFields(typ, body string) []string {
	var out []string
	for _, part := range strings.Split(comment.ReplaceAllString(body, ""), ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		names := fieldNames.FindString(part)
		for _, n := range strings.Split(names, ", ") {
			if n = strings.TrimPrefix(strings.TrimSpace(n), "*"); n != "" && n[0] >= 'A' && n[0] <= 'Z' {
				out = append(out, typ+"."+n)
			}
		}
	}
	return out
}

// goroot is the Go installation the module builds with (`go env GOROOT`;
// runtime.GOROOT is deprecated).
var goroot = sync.OnceValue(func() string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return runtime.GOROOT() //nolint:staticcheck // the fallback when the go command cannot say
	}
	return strings.TrimSpace(string(out))
})
