package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDelete(t *testing.T) {
	web, api, db := podYAML("web", "img:1"), podYAML("api", "img:1"), podYAML("db", "img:1")
	dns := podNSYAML("infra", "web", "img:1")
	tests := []struct {
		name      string
		manifests map[string]string
		inputs    map[string]string
		opts      DeleteOptions // Files relative to the input dir
		wantOut   string
		wantErr   []string
		want      map[string]string
	}{
		{
			name: "by name, whatever the file name", manifests: map[string]string{"mine.yaml": web, "api.yaml": api},
			opts: DeleteOptions{Names: []string{"web"}}, wantOut: "pod \"web\" deleted\n", want: map[string]string{"api.yaml": api},
		},
		{
			name: "by name in a namespace", manifests: map[string]string{"web.yaml": web, "infra_web.yaml": dns},
			opts: DeleteOptions{Names: []string{"web"}, Namespace: "infra"}, wantOut: "pod \"web\" deleted\n", want: map[string]string{"web.yaml": web},
		},
		{
			name: "pod/NAME form", manifests: map[string]string{"web.yaml": web},
			opts: DeleteOptions{Names: []string{"pod/web"}}, wantOut: "pod \"web\" deleted\n", want: map[string]string{},
		},
		{
			name: "multi-doc: just that doc", manifests: map[string]string{"all.yaml": api + "---\n" + web + "---\n" + db},
			opts: DeleteOptions{Names: []string{"web"}}, wantOut: "pod \"web\" deleted\n", want: map[string]string{"all.yaml": api + "---\n" + db},
		},
		{
			name: "multi-doc: last docs remove the file", manifests: map[string]string{"all.yaml": api + "---\n" + web},
			opts: DeleteOptions{Names: []string{"web", "api"}}, wantOut: "pod \"web\" deleted\npod \"api\" deleted\n", want: map[string]string{},
		},
		{
			name: "printed in the order named, whatever the files", manifests: map[string]string{"web.yaml": web, "api.yaml": api, "db.yaml": db},
			opts: DeleteOptions{Names: []string{"web", "nope", "api"}}, wantOut: "pod \"web\" deleted\npod \"api\" deleted\n",
			wantErr: []string{`pods "nope" not found`}, want: map[string]string{"db.yaml": db},
		},
		{
			name: "by file", manifests: map[string]string{"all.yaml": api + "---\n" + web + "---\n" + db},
			inputs: map[string]string{"x.yaml": web + "---\n" + db}, opts: DeleteOptions{Files: []string{"x.yaml"}},
			wantOut: "pod \"web\" deleted\npod \"db\" deleted\n", want: map[string]string{"all.yaml": api},
		},
		{
			name: "not found", manifests: map[string]string{"web.yaml": web},
			opts: DeleteOptions{Names: []string{"nope"}}, wantErr: []string{`pods "nope" not found`}, want: map[string]string{"web.yaml": web},
		},
		{
			name: "not found in another namespace", manifests: map[string]string{"web.yaml": web},
			opts: DeleteOptions{Names: []string{"web"}, Namespace: "infra"}, wantErr: []string{`pods "web" not found`}, want: map[string]string{"web.yaml": web},
		},
		{
			name: "ignore not found", manifests: map[string]string{"web.yaml": web},
			opts: DeleteOptions{Names: []string{"nope"}, IgnoreNotFound: true}, want: map[string]string{"web.yaml": web},
		},
		{
			name: "found ones are deleted, missing ones reported", manifests: map[string]string{"web.yaml": web, "api.yaml": api},
			opts: DeleteOptions{Names: []string{"nope", "web"}}, wantOut: "pod \"web\" deleted\n", wantErr: []string{`pods "nope" not found`},
			want: map[string]string{"api.yaml": api},
		},
		{
			name: "missing manifest dir", opts: DeleteOptions{Names: []string{"web"}}, wantErr: []string{`pods "web" not found`},
		},
		{
			name: "names and files", manifests: map[string]string{}, inputs: map[string]string{"x.yaml": web},
			opts: DeleteOptions{Names: []string{"web"}, Files: []string{"x.yaml"}}, wantErr: []string{"not both"}, want: map[string]string{},
		},
		{
			name: "invalid -f file", manifests: map[string]string{"web.yaml": web}, inputs: map[string]string{"x.yaml": "kind: Pod\n"},
			opts: DeleteOptions{Files: []string{"x.yaml"}}, wantErr: []string{"x.yaml: apiVersion: Required value"}, want: map[string]string{"web.yaml": web},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.manifests, tt.inputs)
			opts := tt.opts
			opts.ManifestDir = e.manifests
			for i, f := range opts.Files {
				opts.Files[i] = filepath.Join(e.inputs, f)
			}
			var out, errOut bytes.Buffer
			err := Delete(context.Background(), opts, IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			checkErr(t, err, tt.wantErr)
			if out.String() != tt.wantOut {
				t.Errorf("out = %q, want %q", out.String(), tt.wantOut)
			}
			if got := dirState(t, e.manifests); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("manifest dir =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
