package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	yamlv3 "go.yaml.in/yaml/v3"
)

// ClusterEdit is a config file with its cluster: section set, checked,
// not written yet.
type ClusterEdit struct {
	path string
	data []byte
	mode fs.FileMode
}

// EditCluster sets the cluster: section of the config file at path ("":
// DefaultPath) to c, keeping the rest of the file (its comments too), or
// makes a file of it if there is none. The result is checked as Load
// checks a file; nothing is written until Write.
func EditCluster(path string, c Cluster) (*ClusterEdit, error) {
	if path == "" {
		path = DefaultPath
	}
	data, err := readLimited(path)
	mode := fs.FileMode(0o644)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = nil
	case err != nil:
		return nil, fmt.Errorf("config: %w", err)
	default:
		if st, err := os.Stat(path); err == nil {
			mode = st.Mode().Perm()
		}
	}
	out, err := setCluster(data, c)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if _, err := Parse(out); err != nil {
		return nil, fmt.Errorf("config %s: with the cluster section: %w", path, err)
	}
	return &ClusterEdit{path: path, data: out, mode: mode}, nil
}

// Path is the config file's.
func (e *ClusterEdit) Path() string { return e.path }

// Write replaces the file (atomically, its mode kept): on an error it is
// untouched.
func (e *ClusterEdit) Write() error {
	if err := os.MkdirAll(filepath.Dir(e.path), 0o755); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return writeAtomic(e.path, e.data, e.mode)
}

// setCluster is data with its top-level cluster key set to c.
func setCluster(data []byte, c Cluster) ([]byte, error) {
	var doc yamlv3.Node
	if len(bytes.TrimSpace(data)) > 0 {
		if err := yamlv3.Unmarshal(data, &doc); err != nil {
			return nil, err
		}
	}
	if doc.Kind == 0 {
		doc = yamlv3.Node{Kind: yamlv3.DocumentNode, Content: []*yamlv3.Node{{Kind: yamlv3.MappingNode, Tag: "!!map"}}}
	}
	if doc.Kind != yamlv3.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yamlv3.MappingNode {
		return nil, errors.New("not a YAML mapping: cannot add the cluster section")
	}
	value := &yamlv3.Node{Kind: yamlv3.MappingNode, Tag: "!!map"}
	add := func(k, v string) {
		value.Content = append(value.Content, &yamlv3.Node{Kind: yamlv3.ScalarNode, Value: k},
			&yamlv3.Node{Kind: yamlv3.ScalarNode, Value: v, Style: yamlv3.DoubleQuotedStyle})
	}
	add("kubeconfig", c.Kubeconfig)
	if c.NodeName != "" {
		add("nodeName", c.NodeName)
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "cluster" {
			m.Content[i+1] = value
			return encode(&doc)
		}
	}
	m.Content = append(m.Content, &yamlv3.Node{Kind: yamlv3.ScalarNode, Value: "cluster"}, value)
	return encode(&doc)
}

func encode(doc *yamlv3.Node) ([]byte, error) {
	var b bytes.Buffer
	e := yamlv3.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(doc); err != nil {
		return nil, err
	}
	if err := e.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeAtomic writes data to path through a temporary file renamed over it.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(data)
	for _, err := range []error{werr, f.Chmod(mode), f.Sync(), f.Close()} {
		if err != nil {
			return fmt.Errorf("config: write %s: %w", path, err)
		}
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("config: write %s: %w", path, err)
	}
	return nil
}
