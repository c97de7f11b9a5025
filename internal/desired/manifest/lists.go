package manifest

import (
	"bytes"
	"errors"
	"fmt"

	"sigs.k8s.io/yaml"
)

// listKinds are the v1 list kinds `kubectl apply -f` flattens: what
// `kubectl get -o yaml|json` (and `podhost get`) print.
var listKinds = map[string]bool{"List": true, "PodList": true, "ConfigMapList": true, "SecretList": true}

// Origin is where a document of ExpandLists' output came from: Doc is the
// 1-based document of the input, Item the index in its list's items (-1
// for a document that was not a list).
type Origin struct {
	Doc, Item int
}

// Expanded is an input whose lists were flattened (ExpandLists).
type Expanded struct {
	Data []byte
	// Origins[i] is the source of document i+1 of Data; nil when the
	// input held no list (Data is then the input itself).
	Origins []Origin
	docs    int // documents of the input
}

// ExpandLists replaces each document that is a v1 List (or PodList,
// ConfigMapList, SecretList) by one YAML document per item, as `kubectl
// apply -f` flattens lists, so the output of `get pods -o yaml` can be
// applied again. A list whose items are not objects, or that holds a list,
// is an error naming the item; a document that does not parse is left as
// it is (decoding reports it).
func ExpandLists(file string, data []byte) (Expanded, error) {
	if err := checkInput(data); err != nil {
		return Expanded{}, fileError(file, "%s", err)
	}
	docs := splitDocs(data)
	out := Expanded{Data: data, docs: len(docs)}
	var parts [][]byte
	var origins []Origin
	var e errs
	lists := false
	for i, d := range docs {
		items, ie := listItems(d)
		for _, fe := range ie {
			if len(docs) > 1 {
				fe.Doc = i + 1
			}
		}
		e = append(e, ie...)
		if items == nil {
			parts, origins = append(parts, d.raw), append(origins, Origin{Doc: i + 1, Item: -1})
			continue
		}
		lists = true
		for j, it := range items {
			parts, origins = append(parts, it), append(origins, Origin{Doc: i + 1, Item: j})
		}
	}
	if err := finish(file, e); err != nil {
		return Expanded{}, err
	}
	if lists {
		out.Data, out.Origins = joinYAML(parts), origins
	}
	return out, nil
}

// listItems returns one YAML document per item when d is a list (nil
// otherwise).
func listItems(d doc) ([][]byte, errs) {
	if !bytes.Contains(d.raw, []byte("List")) {
		return nil, nil
	}
	obj, pe := parseObject(d)
	if len(pe) > 0 || obj == nil {
		return nil, nil
	}
	kind, _ := obj["kind"].(string)
	if version, _ := obj["apiVersion"].(string); !listKinds[kind] || version != "v1" {
		return nil, nil
	}
	var e errs
	raw, ok := obj["items"].([]any)
	if !ok && obj["items"] != nil {
		e.add("items", "Invalid value: %s: a %s's items must be a list of objects", describe(obj["items"]), kind)
		return nil, e
	}
	items := make([][]byte, 0, len(raw))
	for i, it := range raw {
		m, ok := it.(map[string]any)
		if k, _ := m["kind"].(string); !ok || listKinds[k] {
			e.add(fmt.Sprintf("items[%d]", i), "Invalid value: %s: each item of a %s must be an object that is not a list", describe(it), kind)
			continue
		}
		y, err := yaml.Marshal(m)
		if err != nil {
			e.add(fmt.Sprintf("items[%d]", i), "%s", err)
			continue
		}
		items = append(items, y)
	}
	if len(e) > 0 {
		return nil, e
	}
	return items, nil
}

func joinYAML(parts [][]byte) []byte {
	var b bytes.Buffer
	for i, p := range parts {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(p)
		if len(p) > 0 && p[len(p)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// Locate rewrites the errors of decoding x.Data so they name the input's
// documents and list items: "[doc 2] spec.x" of the flattened data becomes
// "items[1].spec.x" of the list it came from.
func (x Expanded) Locate(err error) error {
	var list ErrorList
	if x.Origins == nil || !errors.As(err, &list) {
		return err
	}
	for _, fe := range list {
		n := fe.Doc
		if n == 0 && len(x.Origins) == 1 {
			n = 1
		}
		if n < 1 || n > len(x.Origins) {
			continue
		}
		o := x.Origins[n-1]
		fe.Doc = 0
		if x.docs > 1 {
			fe.Doc = o.Doc
		}
		if o.Item >= 0 {
			fe.Field = joinField(fmt.Sprintf("items[%d]", o.Item), fe.Field)
		}
	}
	return err
}

func joinField(prefix, field string) string {
	if field == "" {
		return prefix
	}
	return prefix + "." + field
}
