package manifest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The schema check walks a document's generic data alongside the Go type it
// will be decoded into (core/v1 Pod) and reports, with exact field paths
// (list indices included): unknown fields (strict decoding, like kubectl
// --validate=strict), values of the wrong JSON type, integers out of range
// and values a custom decoder rejects (quantities, int-or-string). The JSON
// decoder reports the first two without indices and the third without any
// path, hence this walk. Field names match case-sensitively, as in
// Kubernetes. null is accepted anywhere (it means "unset").

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	quantityType    = reflect.TypeFor[resource.Quantity]()
	intOrStringType = reflect.TypeFor[intstr.IntOrString]()
	structInfoCache sync.Map // reflect.Type -> *structInfo
)

const errNotAnInt32Msg = "expected an integer (int32) or a string"

type structInfo struct {
	names  []string                // JSON names in declaration order
	fields map[string]reflect.Type // JSON name -> Go type
}

// checkSchema reports every mismatch between v and type t.
func checkSchema(v any, t reflect.Type, p fpath, e *errs) {
	if v == nil {
		return
	}
	if hasCustomDecoding(t) {
		checkCustom(v, t, p, e)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		checkSchema(v, t.Elem(), p, e)
	case reflect.Struct:
		checkObject(v, t, p, e)
	case reflect.Map:
		checkMap(v, t, p, e)
	case reflect.Slice:
		checkSlice(v, t, p, e)
	case reflect.String:
		if _, ok := v.(string); !ok {
			typeError(v, "string", p, e)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			typeError(v, "boolean", p, e)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		checkInteger(v, t, p, e)
	case reflect.Float32, reflect.Float64:
		switch v.(type) {
		case int64, uint64, float64:
		default:
			typeError(v, "number", p, e)
		}
	case reflect.Interface:
		// anything goes
	default:
		e.add(p.String(), "cannot decode into Go %s", t)
	}
}

func checkObject(v any, t reflect.Type, p fpath, e *errs) {
	m, ok := v.(map[string]any)
	if !ok {
		typeError(v, "object", p, e)
		return
	}
	info := structFields(t)
	known := 0
	for _, name := range info.names {
		if val, ok := m[name]; ok {
			known++
			checkSchema(val, info.fields[name], p.field(name), e)
		}
	}
	if known == len(m) {
		return
	}
	var unknown []string
	for k := range m {
		if _, ok := info.fields[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		detail := "unknown field"
		if s := suggest(k, info.names); s != "" {
			detail += fmt.Sprintf(" (did you mean %q?)", s)
		}
		e.add(p.field(k).String(), "%s", detail)
	}
}

func checkMap(v any, t reflect.Type, p fpath, e *errs) {
	m, ok := v.(map[string]any)
	if !ok {
		typeError(v, "object", p, e)
		return
	}
	if t.Key().Kind() != reflect.String {
		e.add(p.String(), "cannot decode into Go %s", t)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		checkSchema(m[k], t.Elem(), p.key(k), e)
	}
}

func checkSlice(v any, t reflect.Type, p fpath, e *errs) {
	if t.Elem().Kind() == reflect.Uint8 { // []byte is base64 in JSON
		s, ok := v.(string)
		if !ok {
			typeError(v, "base64 string", p, e)
			return
		}
		if _, err := base64.StdEncoding.DecodeString(s); err != nil {
			e.add(p.String(), "Invalid value: %q: not valid base64", short(s))
		}
		return
	}
	list, ok := v.([]any)
	if !ok {
		typeError(v, "list", p, e)
		return
	}
	for i, item := range list {
		checkSchema(item, t.Elem(), p.index(i), e)
	}
}

func checkInteger(v any, t reflect.Type, p fpath, e *errs) {
	var f float64
	switch n := v.(type) {
	case int64:
		if n < 0 && isUnsigned(t) {
			e.add(p.String(), "Invalid value: %d: must not be negative", n)
			return
		}
		if !fitsInt(n, t) {
			e.add(p.String(), "Invalid value: %d: out of range for %s", n, intName(t))
		}
		return
	case uint64:
		f = float64(n)
	case float64:
		f = n
		if n != math.Trunc(n) {
			e.add(p.String(), "Invalid value: %v: must be an integer", n)
			return
		}
	default:
		typeError(v, "integer", p, e)
		return
	}
	if !fitsFloat(f, t) {
		e.add(p.String(), "Invalid value: %v: out of range for %s", v, intName(t))
	}
}

func isUnsigned(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func fitsInt(n int64, t reflect.Type) bool {
	if isUnsigned(t) {
		return n >= 0 && (t.Bits() == 64 || uint64(n) < 1<<t.Bits())
	}
	return t.Bits() == 64 || (n >= -(1<<(t.Bits()-1)) && n < 1<<(t.Bits()-1))
}

func fitsFloat(f float64, t reflect.Type) bool {
	bits := t.Bits()
	if isUnsigned(t) {
		return f >= 0 && f < math.Ldexp(1, bits)
	}
	return f >= -math.Ldexp(1, bits-1) && f < math.Ldexp(1, bits-1)
}

func intName(t reflect.Type) string {
	if isUnsigned(t) {
		return fmt.Sprintf("uint%d", t.Bits())
	}
	return fmt.Sprintf("int%d", t.Bits())
}

var customCache sync.Map // reflect.Type -> bool

// hasCustomDecoding reports whether *t decodes itself from JSON.
func hasCustomDecoding(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		return false
	}
	if v, ok := customCache.Load(t); ok {
		return v.(bool)
	}
	custom := reflect.PointerTo(t).Implements(unmarshalerType)
	customCache.Store(t, custom)
	return custom
}

// checkCustom checks values of types with their own JSON decoding.
func checkCustom(v any, t reflect.Type, p fpath, e *errs) {
	switch t {
	case intOrStringType:
		switch n := v.(type) {
		case string:
			return
		case int64:
			if n >= math.MinInt32 && n <= math.MaxInt32 {
				return
			}
		case float64:
			if n == math.Trunc(n) && n >= math.MinInt32 && n <= math.MaxInt32 {
				return
			}
		}
		e.add(p.String(), "Invalid value: %s: %s", describe(v), errNotAnInt32Msg)
		return
	case quantityType:
		switch v.(type) {
		case string, int64, uint64, float64:
		default:
			typeError(v, "quantity (a string like \"500m\" or \"1Gi\", or a number)", p, e)
			return
		}
	}
	b, err := json.Marshal(v)
	if err == nil {
		u := reflect.New(t).Interface().(json.Unmarshaler)
		err = u.UnmarshalJSON(b)
	}
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		e.add(p.String(), "Invalid value: %s: %s", describe(v), msg)
	}
}

func typeError(v any, want string, p fpath, e *errs) {
	detail := fmt.Sprintf("expected %s, got %s", want, strings.TrimPrefix(strings.TrimPrefix(kindOf(v), "a "), "an "))
	if want == "string" {
		switch v.(type) {
		case bool:
			detail += " (quote it: YAML reads unquoted yes/no/on/off/true/false as booleans)"
		case int64, uint64, float64:
			detail += " (quote it)"
		}
	}
	e.add(p.String(), "Invalid value: %s: %s", describe(v), detail)
}

// describe renders a bad value briefly, in the style of field.Invalid.
func describe(v any) string {
	switch t := v.(type) {
	case string:
		return fmt.Sprintf("%q", short(t))
	case bool, int64, uint64, float64:
		return fmt.Sprint(t)
	case []any:
		return "list"
	case map[string]any:
		return "object"
	default:
		return "null"
	}
}

// structFields returns the JSON fields of struct type t, with embedded
// structs (json ",inline" or untagged anonymous fields) flattened as
// encoding/json does.
func structFields(t reflect.Type) *structInfo {
	if cached, ok := structInfoCache.Load(t); ok {
		return cached.(*structInfo)
	}
	info := &structInfo{fields: map[string]reflect.Type{}}
	addStructFields(info, t)
	cached, _ := structInfoCache.LoadOrStore(t, info)
	return cached.(*structInfo)
}

func addStructFields(info *structInfo, t reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addStructFields(info, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := info.fields[name]; !dup {
			info.names = append(info.names, name)
			info.fields[name] = f.Type
		}
	}
}

// suggest returns the known name closest to an unknown one, or "".
func suggest(unknown string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if strings.EqualFold(n, unknown) {
			return n
		}
		if d := editDistance(strings.ToLower(unknown), strings.ToLower(n), bestDist); d < bestDist {
			best, bestDist = n, d
		}
	}
	if len(unknown) < 4 && bestDist > 1 {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or limit when it is
// at least limit.
func editDistance(a, b string, limit int) int {
	if len(a) > 64 || len(b) > 64 {
		return limit
	}
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
