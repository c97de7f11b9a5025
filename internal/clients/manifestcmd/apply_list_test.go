package manifestcmd

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/desired/manifest"
)

// exported is what `podhost get pods -o yaml` prints for the pods of
// docs: a v1 List of the decoded pods, each with a status and a node name.
func exported(t *testing.T, docs ...string) string {
	t.Helper()
	var items []any
	for _, d := range docs {
		pods, err := manifest.Decode("x.yaml", []byte(d))
		if err != nil {
			t.Fatal(err)
		}
		p := pods[0]
		p.Spec.NodeName = "node1"
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.89.0.7"}
		items = append(items, p)
	}
	out, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{}, "items": items})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// A v1 List (what `get -o yaml|json` prints) is applied as its items, as
// kubectl does; applying get's output of unchanged pods again changes
// nothing; errors name the list item.
func TestApplyList(t *testing.T) {
	web1, api1 := podYAML("web", "img:1"), podYAML("api", "img:1")
	list := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: web}\n  spec:\n    containers: [{name: main, image: 'img:1'}]\n" +
		"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: conf}\n  data: {a: b}\n"
	tests := []struct {
		name      string
		manifests map[string]string
		input     string
		wantOut   string
		want      map[string]string // nil: only check wantOut
		wantErr   []string
		check     func(t *testing.T, dir map[string]string)
	}{
		{
			name: "items created", manifests: map[string]string{}, input: list,
			wantOut: "pod/web created\nconfigmap/conf created\n",
		},
		{
			name: "get's output of unchanged pods changes nothing", manifests: map[string]string{"web.yaml": web1, "more.yaml": api1},
			input: exported(t, web1, api1), wantOut: "pod/web unchanged\npod/api unchanged\n",
			want: map[string]string{"web.yaml": web1, "more.yaml": api1},
		},
		{
			name: "get's output after an edit replaces that pod only", manifests: map[string]string{"web.yaml": web1, "more.yaml": api1},
			input: strings.Replace(exported(t, web1, api1), "image: img:1", "image: img:2", 1), wantOut: "pod/web replaced\npod/api unchanged\n",
			check: func(t *testing.T, dir map[string]string) {
				web := dir["web.yaml"]
				for _, gone := range []string{"status:", "podIP", "nodeName", "podhost.io/config-hash", "creationTimestamp"} {
					if strings.Contains(web, gone) {
						t.Errorf("web.yaml keeps %q from get's output:\n%s", gone, web)
					}
				}
				// The uid get printed is podhost's (web1 names none): an edit
				// that replaces the pod is a new pod with a UID of its own.
				if strings.Contains(web, "uid:") || !strings.Contains(web, "image: img:2") {
					t.Errorf("web.yaml keeps the exported uid or lost the edit:\n%s", web)
				}
			},
		},
		{
			name: "JSON list", manifests: map[string]string{"web.yaml": web1},
			input:   `{"apiVersion": "v1", "kind": "PodList", "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "api"}, "spec": {"containers": [{"name": "main", "image": "img:1"}]}}]}`,
			wantOut: "pod/api created\n",
		},
		{
			name: "an item's error names the item", manifests: map[string]string{}, input: strings.Replace(list, "image: 'img:1'", "image: ''", 1),
			wantErr: []string{"x.yaml: items[0].spec.containers[0].image: Required value"},
		},
		{
			name: "an item's error in a second document", manifests: map[string]string{}, input: api1 + "---\n" + strings.Replace(list, "image: 'img:1'", "image: ''", 1),
			wantErr: []string{"x.yaml: [doc 2] items[0].spec.containers[0].image: Required value"},
		},
		{
			name: "a list in a list", manifests: map[string]string{}, input: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: List, items: []}\n",
			wantErr: []string{"x.yaml: items[0]: Invalid value"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.manifests, map[string]string{"x.yaml": tt.input})
			var out bytes.Buffer
			opts := ApplyOptions{Files: []string{filepath.Join(e.inputs, "x.yaml")}, ManifestDir: e.manifests}
			_, err := Apply(context.Background(), opts, cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &bytes.Buffer{}})
			checkErr(t, err, tt.wantErr)
			if out.String() != tt.wantOut {
				t.Errorf("out = %q, want %q", out.String(), tt.wantOut)
			}
			if tt.want != nil {
				if got := dirState(t, e.manifests); !reflect.DeepEqual(got, tt.want) {
					t.Errorf("manifest dir =\n%q\nwant\n%q", got, tt.want)
				}
			}
			if tt.check != nil {
				tt.check(t, dirState(t, e.manifests))
			}
		})
	}
}
