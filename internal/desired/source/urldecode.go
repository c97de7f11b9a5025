package source

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// errNoDocument: an empty response is what a server that lost its content
// or a proxy that cut the body sends, not a request to remove every pod.
var errNoDocument = errors.New("the response holds no document (an empty response keeps the last good pods; serve an empty v1 List to remove them all)")

// errTrailingSeparator: a stream cut right after a document separator.
var errTrailingSeparator = errors.New("the response ends with a document separator and no document after it: it may be cut off")

// decodeURL decodes and validates a response body (name, the redacted URL,
// is used in errors and the config-source annotation): a Pod, a List (v1
// List, PodList, ConfigMapList, SecretList, as `kubectl apply -f` flattens
// them) or a multi-document stream of Pods, ConfigMaps and Secrets. It
// must hold at least one document, and its last document separator must
// be followed by a document: only a complete response lists no pod
// (`{"apiVersion":"v1","kind":"List","items":[]}` does).
func decodeURL(name string, body []byte) (manifest.Objects, error) {
	x, err := manifest.ExpandLists(name, body)
	if err != nil {
		return manifest.Objects{}, err
	}
	objs, err := manifest.DecodeObjects(name, x.Data)
	if err != nil {
		return manifest.Objects{}, x.Locate(err)
	}
	if docs, err := manifest.Docs(body); err != nil || len(docs) == 0 {
		return manifest.Objects{}, fmt.Errorf("%s: %w", name, errors.Join(err, errNoDocument))
	}
	if endsWithSeparator(body) {
		return manifest.Objects{}, fmt.Errorf("%s: %w", name, errTrailingSeparator)
	}
	return objs, nil
}

// endsWithSeparator reports whether the last line of data that is not
// blank or a comment is a YAML document marker ("---" alone).
func endsWithSeparator(data []byte) bool {
	for len(data) > 0 {
		i := bytes.LastIndexByte(bytes.TrimRight(data, "\n"), '\n')
		line := bytes.TrimRight(data[i+1:], " \t\r\n")
		data = data[:max(i, 0)]
		if t := bytes.TrimSpace(line); len(t) == 0 || t[0] == '#' {
			continue
		}
		rest, ok := bytes.CutPrefix(line, []byte("---"))
		if !ok || len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' {
			return false
		}
		rest = bytes.TrimSpace(rest)
		return len(rest) == 0 || rest[0] == '#'
	}
	return false
}
