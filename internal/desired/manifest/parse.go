package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	sigsjson "sigs.k8s.io/json"

	yaml "go.yaml.in/yaml/v2"
)

// maxValues bounds the number of values (scalars, lists, mappings) one
// document may hold after YAML aliases are expanded. go-yaml already refuses
// documents whose decoding is dominated by alias expansion ("billion
// laughs"); this bounds what survives that check, so a 1 MiB file can never
// turn into hundreds of megabytes of objects downstream. A large real Pod has
// a few thousand values.
const maxValues = 200_000

// Expanded bytes: go-yaml bounds alias expansion by the number of nodes
// decoded, not by their size, so a 124 KB document whose aliases all point
// at one 60 KB scalar expands to hundreds of megabytes of strings, which
// the canonical JSON, the strict decode and the hash then copy several
// times (4 GB and a minute of CPU; a 1 MiB one OOM-kills the daemon).
// Neither go-yaml v2/v3 nor sigs.k8s.io/yaml offers a byte limit (the API
// server relies on its 3 MiB request limit and go-yaml's node ratio), so
// the converter counts the bytes of every string and key it yields,
// aliased ones each time they are used, against a budget per file: four
// times the input, at least minExpanded (room for anchors reused across
// containers in a small file), at most maxExpanded. Without aliases a
// document never counts more bytes than it has.
const (
	expandFactor = 4
	minExpanded  = 256 << 10
	maxExpanded  = 4 << 20
)

// byteBudget is what is left of a file's expanded-bytes budget; the
// documents of one file share it.
type byteBudget struct{ left, limit int }

func newByteBudget(inputLen int) *byteBudget {
	n := min(max(expandFactor*inputLen, minExpanded), maxExpanded)
	return &byteBudget{left: n, limit: n}
}

// parseDoc turns one document into generic JSON-compatible data:
// map[string]any, []any, string, bool, int64, uint64, float64 and nil.
// line is the document's first line in the file, used to fix up the line
// numbers in syntax errors. Duplicate keys are errors.
// b bounds the bytes the document may expand to (nil: a budget for raw
// alone).
func parseDoc(raw []byte, line int, b *byteBudget) (any, errs) {
	if b == nil {
		b = newByteBudget(len(raw))
	}
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		v, jerrs, syntax := parseJSON(raw, line)
		if !syntax {
			return v, jerrs
		}
		// Not JSON: maybe a YAML flow mapping ({a: b}). Prefer the JSON
		// error if it is not YAML either.
		if v, yerrs := parseYAML(raw, line, b); len(yerrs) == 0 {
			return v, nil
		}
		return nil, jerrs
	}
	return parseYAML(raw, line, b)
}

// parseJSON decodes a JSON document. syntax reports a syntax error.
func parseJSON(raw []byte, line int) (v any, e errs, syntax bool) {
	strict, err := sigsjson.UnmarshalStrict(raw, &v, sigsjson.DisallowDuplicateFields)
	if err != nil {
		if ok, off := sigsjson.SyntaxErrorOffset(err); ok {
			// The offset is just past the offending byte.
			l, c := lineCol(raw, int(off)-1)
			e.add("", "JSON syntax error at line %d, column %d: %s", l+line-1, c, err)
			return nil, e, true
		}
		e.add("", "JSON: %s", err)
		return nil, e, false
	}
	for _, se := range strict {
		var fe sigsjson.FieldError
		if errors.As(se, &fe) {
			e.add(fe.FieldPath(), "duplicate field")
			continue
		}
		e.add("", "JSON: %s", se)
	}
	if len(e) > 0 {
		return nil, e, false
	}
	return v, nil, false
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// yamlError renders a go-yaml error as one line, with line numbers counted
// from the start of the file.
func yamlError(err error, line int) string {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msg = "yaml: " + strings.Join(te.Errors, "; ")
	}
	msg = yamlLineRE.ReplaceAllStringFunc(msg, func(m string) string {
		n, convErr := strconv.Atoi(m[len("line "):])
		if convErr != nil {
			return m
		}
		return "line " + strconv.Itoa(n+line-1)
	})
	return strings.Join(strings.Fields(msg), " ")
}

// parseYAML decodes a YAML document. It decodes into yaml.MapSlice first,
// which keeps duplicate keys so they can be reported with their field path.
// go-yaml drops merge keys ("<<") when decoding into MapSlice, so documents
// that may contain one are decoded a second time into plain maps, which
// apply merges (with go-yaml v2's semantics, the same as kubectl's).
func parseYAML(raw []byte, line int, b *byteBudget) (any, errs) {
	var ms yaml.MapSlice
	if err := yaml.Unmarshal(raw, &ms); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, notAMapping(raw, line)
		}
		var e errs
		e.add("", "%s", yamlError(err, line))
		return nil, e
	}
	left := b.left
	c := converter{budget: maxValues, bytes: b}
	v := c.convert(ms, nil)
	if len(c.errs) == 0 && bytes.Contains(raw, []byte("<<")) {
		var generic any
		if err := yaml.Unmarshal(raw, &generic); err != nil {
			c.errs.add("", "%s", yamlError(err, line))
			return nil, c.errs
		}
		b.left = left // the second pass replaces the first
		c = converter{budget: maxValues, bytes: b}
		v = c.convert(generic, nil)
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return v, nil
}

// notAMapping explains a document whose top level is not a mapping.
func notAMapping(raw []byte, line int) errs {
	var v any
	var e errs
	if err := yaml.Unmarshal(raw, &v); err != nil {
		e.add("", "%s", yamlError(err, line))
		return e
	}
	e.add("", "document is %s, not a Pod object (a YAML mapping or JSON object)", kindOf(v))
	return e
}

// converter turns go-yaml values into JSON-compatible ones.
type converter struct {
	budget int
	bytes  *byteBudget
	over   bool // bytes ran out (reported once)
	errs   errs
}

// spend counts n expanded bytes; false once the file's budget is spent.
func (c *converter) spend(n int) bool {
	if c.over {
		return false
	}
	c.bytes.left -= n
	if c.bytes.left < 0 {
		c.over = true
		c.errs.add("", "document too large: more than %d bytes after expanding YAML aliases (a manifest may expand to %dx its size, at most %d bytes)",
			c.bytes.limit, expandFactor, maxExpanded)
		return false
	}
	return true
}

func (c *converter) convert(v any, p fpath) any {
	c.budget--
	if c.budget == 0 {
		c.errs.add("", "document too large: more than %d values (after expanding YAML aliases, if any)", maxValues)
	}
	if c.budget < 0 || !c.spend(1) {
		return nil
	}
	switch t := v.(type) {
	case yaml.MapSlice:
		return c.mapSlice(t, p)
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, val := range t {
			ks := c.key(k, p)
			m[ks] = c.convert(val, p.field(ks))
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = c.convert(val, p.index(i))
		}
		return out
	default:
		return c.scalar(v, p)
	}
}

func (c *converter) mapSlice(ms yaml.MapSlice, p fpath) any {
	m := make(map[string]any, len(ms))
	for _, item := range ms {
		k := c.key(item.Key, p)
		if _, dup := m[k]; dup {
			c.errs.add(p.field(k).String(), "duplicate field")
			continue
		}
		m[k] = c.convert(item.Value, p.field(k))
	}
	return m
}

func (c *converter) scalar(v any, p fpath) any {
	switch t := v.(type) {
	case string:
		if !c.spend(len(t)) {
			return nil
		}
		return v
	case nil, bool, int64, uint64:
		return v
	case int:
		return int64(t)
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			c.errs.add(p.String(), "Invalid value: %v: not representable in JSON", t)
			return nil
		}
		return t
	case time.Time:
		return t.Format(time.RFC3339Nano)
	case []byte:
		if !c.spend(len(t)) {
			return nil
		}
		return string(t)
	default:
		c.errs.add(p.String(), "unsupported YAML value of type %T", v)
		return nil
	}
}

// key converts a mapping key to a string as sigs.k8s.io/yaml does.
func (c *converter) key(k any, p fpath) string {
	switch t := k.(type) {
	case string:
		c.spend(len(t))
		return t
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(t)
	case int:
		return strconv.Itoa(t)
	case int64:
		return strconv.FormatInt(t, 10)
	case uint64:
		return strconv.FormatUint(t, 10)
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64)
	default:
		c.errs.add(p.String(), "unsupported mapping key %s", oneLine(fmt.Sprintf("%v", k)))
		return fmt.Sprintf("%v", k)
	}
}

// kindOf names the JSON type of a generic value for error messages.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any, map[any]any, yaml.MapSlice:
		return "an object"
	default:
		return fmt.Sprintf("a %T", v)
	}
}
