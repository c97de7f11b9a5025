package cp

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/clients/clienttest"
	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
	"github.com/podhost/podhost/internal/services/kubeapi/stream"
)

func TestCpArgs(t *testing.T) {
	for _, tc := range []struct {
		src, dest string
		err       string
	}{
		{src: "f", dest: "web:/tmp/f"},
		{src: "ns/web:/etc/hosts", dest: "h"},
		{src: "web:/a", dest: "web:/b", err: "one of src or dest must be a local file specification"},
		{src: "a", dest: "b", err: "one of src or dest must be a remote file specification"},
		{src: "f", dest: "web:", err: "filepath can not be empty"},
		{src: "", dest: "web:/x", err: "filepath can not be empty"},
		{src: ":/x", dest: "f", err: errFileSpec.Error()},
		{src: "a/b/web:/x", dest: "f", err: errFileSpec.Error()},
	} {
		err := Options{Src: tc.src, Dest: tc.dest}.CheckArgs()
		if (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("cp %q %q: %v, want %q", tc.src, tc.dest, err, tc.err)
		}
	}
}

func TestParseFileSpec(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want fileSpec
	}{
		{"/tmp/f", fileSpec{path: "/tmp/f"}},
		{"web:/tmp/f", fileSpec{pod: "web", path: "/tmp/f"}},
		{"infra/db:/var/log", fileSpec{namespace: "infra", pod: "db", path: "/var/log"}},
		{"web:rel/path", fileSpec{pod: "web", path: "rel/path"}},
		{"web:/a:b", fileSpec{pod: "web", path: "/a:b"}},
	} {
		got, err := parseFileSpec(tc.arg)
		if err != nil || got != tc.want {
			t.Errorf("parseFileSpec(%q) = %+v, %v; want %+v", tc.arg, got, err, tc.want)
		}
	}
}

func TestStripPathShortcuts(t *testing.T) {
	for in, want := range map[string]string{
		"etc/hosts": "etc/hosts", "../../etc": "etc", "..": "", ".": "", "": "", "/x": "x", "a/../b": "a/../b",
	} {
		if got := stripPathShortcuts(in); got != want {
			t.Errorf("stripPathShortcuts(%q) = %q, want %q", in, got, want)
		}
	}
}

// cpDaemon answers the execs of cp as a container would: `test -d` for
// dirs, `tar cf - P` with archives[P] (else tar's error), and `tar -x`
// by listing what it receives.
type cpDaemon struct {
	clienttest.FakeDaemon
	dirs     map[string]bool
	archives map[string][]byte

	mu        sync.Mutex
	reqs      []api.ExecRequest
	extracted []string
}

func (d *cpDaemon) Exec(_ context.Context, pod *corev1.Pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, _ <-chan stream.TerminalSize) (int, error) {
	req := api.ExecRequest{Namespace: pod.Namespace, Name: pod.Name, Container: container, Command: cmd, Stdin: stdin != nil, TTY: tty}
	d.mu.Lock()
	d.reqs = append(d.reqs, req)
	d.mu.Unlock()
	switch {
	case cmd[0] == "test":
		if d.dirs[cmd[2]] {
			return 0, nil
		}
		return 1, nil
	case cmd[0] == "tar" && cmd[1] == "cf":
		a, ok := d.archives[cmd[3]]
		if !ok {
			fmt.Fprintf(stderr, "tar: %s: No such file or directory\n", cmd[3])
			return 1, nil
		}
		_, err := stdout.Write(a)
		return 0, err
	case cmd[len(cmd)-1] == "/ro":
		fmt.Fprintln(stderr, "tar: can't change directory to '/ro'")
		return 1, nil // stdin unread
	}
	var got []string
	tr := tar.NewReader(stdin)
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		b, _ := io.ReadAll(tr)
		got = append(got, fmt.Sprintf("%s %q", hdr.Name, b))
	}
	_, _ = io.Copy(io.Discard, stdin)
	d.mu.Lock()
	d.extracted = got
	d.mu.Unlock()
	return 0, nil
}

// take returns the requests and the extraction seen since the last call.
func (d *cpDaemon) take() ([]api.ExecRequest, []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	reqs, extracted := d.reqs, d.extracted
	d.reqs, d.extracted = nil, nil
	return reqs, extracted
}

func TestCp(t *testing.T) {
	local := t.TempDir()
	writeTree(t, local, "f: F", "d/a: A", "d/sub/b: B", "big: "+strings.Repeat("x", 4<<20))
	b := &cpDaemon{FakeDaemon: clienttest.FakeDaemon{PodList: []*corev1.Pod{clienttest.RunningWebPod()}, RuntimeStatus: api.RuntimeStatus{Healthy: true}}, dirs: map[string]bool{"/tmp": true},
		archives: map[string][]byte{
			"/etc/hosts": buildTar(t, []tarEntry{{name: "etc/hosts", typ: tar.TypeReg, body: "H"}}),
			"/bad":       buildTar(t, []tarEntry{{name: "other/x", typ: tar.TypeReg, body: strings.Repeat("x", 4<<20)}}),
		}}
	sock := clienttest.Serve(t, b)
	in := func(p string) string { return filepath.Join(local, p) }
	tarX := func(dir string) []string { return []string{"tar", "-xmf", "-", "-C", dir} }
	for _, tc := range []struct {
		name, src, dest string
		noPreserve      bool
		cmds            [][]string // after test -d
		extracted       []string
		code            int
		stderr, err     string
	}{
		{name: "file to a new path", src: in("f"), dest: "web:/tmp/x/", cmds: [][]string{tarX("/tmp")}, extracted: []string{`x "F"`}},
		{name: "file into a dir", src: in("f"), dest: "web:/tmp", cmds: [][]string{tarX("/tmp")}, extracted: []string{`f "F"`}},
		{name: "dir to a new path", src: in("d"), dest: "web:/srv/site", cmds: [][]string{tarX("/srv")},
			extracted: []string{`site/a "A"`, `site/sub/b "B"`}},
		{name: "relative dest", src: in("f"), dest: "web:x", cmds: [][]string{tarX(".")}, extracted: []string{`x "F"`}},
		{name: "no-preserve", src: in("f"), dest: "web:/tmp/x", noPreserve: true,
			cmds:      [][]string{{"tar", "--no-same-permissions", "--no-same-owner", "-xmf", "-", "-C", "/tmp"}},
			extracted: []string{`x "F"`}},
		{name: "tar fails in the container", src: in("big"), dest: "web:/ro/big", cmds: [][]string{tarX("/ro")},
			code: 1, stderr: "tar: can't change directory to '/ro'\n"},
		{name: "missing local file", src: in("nope"), dest: "web:/tmp/x", err: in("nope") + " doesn't exist in local filesystem"},
		{name: "missing pod", src: in("f"), dest: "nope:/tmp/x", err: `pods "nope" not found`},
		{name: "out of the pod", src: "web:/etc/hosts", dest: in("h"), cmds: [][]string{{"tar", "cf", "-", "/etc/hosts"}}},
		{name: "missing file in the pod", src: "web:/nope", dest: in("n"), cmds: [][]string{{"tar", "cf", "-", "/nope"}},
			code: 1, stderr: "tar: /nope: No such file or directory\n"},
		{name: "corrupt stream out", src: "web:/bad", dest: in("bad"), cmds: [][]string{{"tar", "cf", "-", "/bad"}}, err: "tar contents corrupted"},
		{name: "missing pod, out", src: "nope:/etc/hosts", dest: in("h2"), err: `pods "nope" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			o := Options{Socket: sock, Namespace: "default", Src: tc.src, Dest: tc.dest, NoPreserve: tc.noPreserve}
			code, err := Copy(context.Background(), o, cmdutil.IOStreams{Out: &out, ErrOut: &errOut})
			if (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if code != tc.code && err == nil || out.Len() != 0 || errOut.String() != tc.stderr {
				t.Errorf("code %d, stdout %q, stderr %q; want %d, \"\", %q", code, out.String(), errOut.String(), tc.code, tc.stderr)
			}
			var cmds [][]string
			reqs, extracted := b.take()
			for _, r := range reqs {
				if r.Command[0] != "test" {
					cmds = append(cmds, r.Command)
				}
				if r.Container != "c" || r.Namespace != "default" || r.Stdin != (r.Command[0] == "tar" && r.Command[1] != "cf") {
					t.Errorf("request %+v: want container c, namespace default, stdin only for tar -x", r)
				}
			}
			if !reflect.DeepEqual(cmds, tc.cmds) || !reflect.DeepEqual(extracted, tc.extracted) {
				t.Errorf("commands %q extracting %q, want %q extracting %q", cmds, extracted, tc.cmds, tc.extracted)
			}
		})
	}
	if got, err := os.ReadFile(in("h")); err != nil || string(got) != "H" {
		t.Errorf("copied out of the pod: %q, %v; want \"H\"", got, err)
	}
	var nf *cmdutil.NotFoundError
	o := Options{Socket: sock, Namespace: "default", Src: "nope:/x", Dest: in("y")}
	if _, err := Copy(context.Background(), o, cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard}); !errors.As(err, &nf) {
		t.Errorf("cp from a missing pod: %v, want a cmdutil.NotFoundError", err)
	}
	if _, err := os.Lstat(in("n")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed copy out left %s: %v", in("n"), err)
	}
}
