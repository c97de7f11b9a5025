package manifestcmd

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// inNamespace applies -n to one document as kubectl apply -n does: a
// document that names no namespace gets ns, written into its metadata
// (the manifest dir's file then declares it there; the rest of the
// document, comments included, stays as given); one that names another is
// kubectl's error, naming the input.
func inNamespace(from string, doc []byte, ns string) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return doc, nil // not an object: the decoder says why
	}
	obj := root.Content[0]
	meta := mapValue(obj, "metadata")
	if meta == nil {
		meta = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		obj.Content = append(obj.Content, scalar("metadata"), meta)
	}
	if meta.Kind != yaml.MappingNode {
		return doc, nil
	}
	if have := mapValue(meta, "namespace"); have != nil && have.Value != "" {
		if have.Value != ns {
			return nil, manifest.ErrorList{{File: manifest.DisplayName(from), Field: "metadata.namespace",
				Detail: fmt.Sprintf("the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.", have.Value, ns, have.Value)}}
		}
		return doc, nil
	} else if have != nil {
		have.Value, have.Tag, have.Style = ns, "!!str", 0
	} else {
		meta.Content = append(meta.Content, scalar("namespace"), scalar(ns))
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, fmt.Errorf("%s: set the namespace: %w", manifest.DisplayName(from), err)
	}
	if !bytes.HasPrefix(bytes.TrimLeft(doc, " \t\r\n"), []byte("{")) {
		return buf.Bytes(), nil
	}
	j, err := sigsyaml.YAMLToJSON(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%s: set the namespace: %w", manifest.DisplayName(from), err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, j, "", "  "); err != nil {
		return nil, fmt.Errorf("%s: set the namespace: %w", manifest.DisplayName(from), err)
	}
	return append(out.Bytes(), '\n'), nil
}

// mapValue is the value of key in a mapping node (nil: absent).
func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
