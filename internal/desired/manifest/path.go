package manifest

import (
	"strconv"
	"strings"
)

// fpath is a field path built while walking generic data. Unlike
// field.Path it does not allocate per step (children share the backing
// array; a path is only rendered when an error is reported), which keeps
// the walk over a document cheap. It renders like field.Path:
// spec.containers[0].resources.limits[cpu].
type fpath []pathSeg

type pathSeg struct {
	name string
	idx  int
	kind uint8 // segField, segIndex or segKey
}

const (
	segField uint8 = iota
	segIndex
	segKey
)

func (p fpath) field(name string) fpath { return append(p, pathSeg{name: name, kind: segField}) }
func (p fpath) index(i int) fpath       { return append(p, pathSeg{idx: i, kind: segIndex}) }
func (p fpath) key(k string) fpath      { return append(p, pathSeg{name: k, kind: segKey}) }

func (p fpath) String() string {
	var b strings.Builder
	for i, s := range p {
		switch s.kind {
		case segField:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
		case segIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
		case segKey:
			b.WriteByte('[')
			b.WriteString(s.name)
			b.WriteByte(']')
		}
	}
	return b.String()
}

// short truncates s for error messages.
func short(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
