package manifestcmd

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/desired/manifestdir"
)

func TestDelete(t *testing.T) {
	web, api, db := podYAML("web", "img:1"), podYAML("api", "img:1"), podYAML("db", "img:1")
	dns := podNSYAML("infra", "web", "img:1")
	labeled := func(name, app string) string {
		return strings.Replace(podYAML(name, "img:1"), "metadata:\n", "metadata:\n  labels: {app: "+app+"}\n", 1)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, labels: {app: web}}\ndata: {k: v}\n"
	grace := func(n int) *int { return &n }
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
			name: "-l: the pods of the namespace whose labels match", manifests: map[string]string{"a.yaml": labeled("web", "web"), "b.yaml": labeled("api", "api"), "c.yaml": cm, "infra_web.yaml": dns},
			opts:    DeleteOptions{Selector: "app=web"},
			wantOut: "pod \"web\" deleted\n", want: map[string]string{"b.yaml": labeled("api", "api"), "c.yaml": cm, "infra_web.yaml": dns},
		},
		{
			name: "services by kind word, by kind/name and --all", manifests: map[string]string{"a.yaml": labeled("web", "web"), "s.yaml": svcDoc("web") + "---\n" + svcDoc("db") + "---\n" + saDoc},
			opts:    DeleteOptions{Names: []string{"svc", "web", "serviceaccount/runner"}},
			wantOut: "service \"web\" deleted\nserviceaccount \"runner\" deleted\n", want: map[string]string{"a.yaml": labeled("web", "web"), "s.yaml": svcDoc("db")},
		},
		{
			name: "RBAC kinds by file", manifests: map[string]string{"a.yaml": web + "---\n" + clusterRoleDoc + "---\n" + roleBindingDoc},
			inputs: map[string]string{"x.yaml": clusterRoleDoc + "---\n" + roleBindingDoc}, opts: DeleteOptions{Files: []string{"x.yaml"}},
			wantOut: "clusterrole \"system:reader\" deleted\nrolebinding \"reader\" deleted\n", want: map[string]string{"a.yaml": web},
		},
		{
			name: "-l with a type", manifests: map[string]string{"a.yaml": labeled("web", "web"), "c.yaml": cm},
			opts:    DeleteOptions{Names: []string{"configmaps"}, Selector: "app=web"},
			wantOut: "configmap \"cfg\" deleted\n", want: map[string]string{"a.yaml": labeled("web", "web")},
		},
		{
			name: "--all: every pod of the namespace", manifests: map[string]string{"all.yaml": api + "---\n" + web, "c.yaml": cm, "infra_web.yaml": dns},
			opts:    DeleteOptions{Names: []string{"pods"}, All: true},
			wantOut: "pod \"api\" deleted\npod \"web\" deleted\n", want: map[string]string{"c.yaml": cm, "infra_web.yaml": dns},
		},
		{
			name: "--all with nothing there", manifests: map[string]string{"c.yaml": cm},
			opts: DeleteOptions{All: true}, wantOut: "No resources found\n", want: map[string]string{"c.yaml": cm},
		},
		{
			name: "-l: names are refused", manifests: map[string]string{"web.yaml": web},
			opts: DeleteOptions{Names: []string{"web"}, Selector: "app=web"}, wantErr: []string{`--all and -l take a resource type (pods, configmaps, secrets, services, serviceaccounts), not names: "web"`}, want: map[string]string{"web.yaml": web},
		},
		{
			name: "--all and -l", manifests: map[string]string{"web.yaml": web},
			opts: DeleteOptions{All: true, Selector: "app=web"}, wantErr: []string{"cannot set --all and --selector at the same time"}, want: map[string]string{"web.yaml": web},
		},
		{
			name: "dry run", manifests: map[string]string{"web.yaml": web},
			opts: DeleteOptions{Names: []string{"web"}, DryRun: cmdutil.DryRunClient}, wantOut: "pod \"web\" deleted (dry run)\n", want: map[string]string{"web.yaml": web},
		},
		{
			name: "--force: force deleted", manifests: map[string]string{"web.yaml": web},
			opts: DeleteOptions{Names: []string{"web"}, Force: true, Wait: true}, wantOut: "pod \"web\" force deleted\n", want: map[string]string{},
		},
		{
			name: "--grace-period=0 without --force is 1", manifests: map[string]string{"web.yaml": web},
			opts: DeleteOptions{Names: []string{"web"}, GracePeriod: grace(0)}, wantOut: "pod \"web\" deleted\n", want: map[string]string{},
		},
		{
			name: "--now and --grace-period", manifests: map[string]string{"web.yaml": web},
			opts: DeleteOptions{Names: []string{"web"}, Now: true, GracePeriod: grace(3)}, wantErr: []string{"--now and --grace-period cannot be specified together"}, want: map[string]string{"web.yaml": web},
		},
		{
			name: "--force and a grace period", manifests: map[string]string{"web.yaml": web},
			opts: DeleteOptions{Names: []string{"web"}, Force: true, GracePeriod: grace(5)}, wantErr: []string{"--force and --grace-period greater than 0 cannot be specified together"}, want: map[string]string{"web.yaml": web},
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
			opts.Socket = filepath.Join(t.TempDir(), "down.sock") // no daemon: no grace sent, no wait
			for i, f := range opts.Files {
				opts.Files[i] = filepath.Join(e.inputs, f)
			}
			var out, errOut bytes.Buffer
			err := Delete(context.Background(), opts, cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
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

// delete's wait ends at once when no daemon answers.
func TestWaitGoneDaemonDown(t *testing.T) {
	opts := DeleteOptions{Socket: filepath.Join(t.TempDir(), "none.sock"), Timeout: time.Minute}
	start := time.Now()
	if err := waitGone(t.Context(), opts, []target{{Kind: manifestdir.Pod, Namespace: "default", Name: "web"}}, cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("waited %v for a daemon that is down", d)
	}
}

// A namespace or name the decoder would refuse is one line, before the
// manifest dir is read (cli's get/describe/logs/exec are checked alike).
func TestDeleteInvalidNames(t *testing.T) {
	s := cmdutil.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
	for _, tt := range []struct{ ns, name, want string }{
		{"..", "web", `invalid namespace "..": a lowercase RFC 1123 label must consist of`},
		{"default", "..", `invalid pod name "..": a lowercase RFC 1123 subdomain must consist of`},
		{"a/b", "web", `invalid namespace "a/b"`},
		{"default", "Web", `invalid pod name "Web"`},
	} {
		err := Delete(t.Context(), DeleteOptions{ManifestDir: t.TempDir(), Namespace: tt.ns, Names: []string{tt.name}}, s)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("delete -n %s %s: %v, want one line %q…", tt.ns, tt.name, err, tt.want)
		}
	}
}

func svcDoc(name string) string {
	return "apiVersion: v1\nkind: Service\nmetadata:\n  name: " + name + "\nspec:\n  selector: {app: " + name + "}\n  ports: [{port: 80}]\n"
}

const saDoc = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: runner\n"

// Kinds without effect (manifest.Ignored): a cluster-scoped one with a
// colon in its name, a namespaced one.
const (
	clusterRoleDoc = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: \"system:reader\"}\nrules: [{apiGroups: [\"\"], resources: [pods], verbs: [get]}]\n"
	roleBindingDoc = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: reader, namespace: kube-system}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: \"system:reader\"}\nsubjects: [{kind: ServiceAccount, name: web, namespace: default}]\n"
)
