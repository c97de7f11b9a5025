// Package cp is `podhost cp`: files and directories copied to and from a
// container as kubectl cp copies them, through an exec of the container's
// tar over the daemon's API, with a tar stream on the exec's stdin or
// stdout (cp_tar.go writes and safely extracts it).
package cp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
)

// Options are the two ends of `podhost cp` and the container to use.
type Options struct {
	Socket, Namespace, Container string
	Src, Dest                    string // [NAMESPACE/]POD:PATH or a local path, one each
	NoPreserve                   bool   // local→pod: the container's tar keeps neither owner nor permissions
}

// fileSpec is one end of a copy: a path in a pod (pod set) or a local one.
type fileSpec struct {
	namespace, pod, path string
}

var errFileSpec = errors.New("filespec must match the canonical format: [[namespace/]pod:]file/path")

// parseFileSpec reads arg as kubectl's extractFileSpec: [[NAMESPACE/]POD:]PATH.
func parseFileSpec(arg string) (fileSpec, error) {
	i := strings.Index(arg, ":")
	switch {
	case i == 0:
		return fileSpec{}, errFileSpec
	case i < 0:
		return fileSpec{path: arg}, nil
	}
	pod, file := arg[:i], arg[i+1:]
	ns, name, found := strings.Cut(pod, "/")
	switch {
	case !found:
		return fileSpec{pod: pod, path: file}, nil
	case strings.Contains(name, "/"):
		return fileSpec{}, errFileSpec
	}
	return fileSpec{namespace: ns, pod: name, path: file}, nil
}

// CheckArgs returns the usage error of Src and Dest, as kubectl words it:
// one of them must name a pod's path and the other a local one.
func (o Options) CheckArgs() error {
	_, _, err := o.specs()
	return err
}

func (o Options) specs() (src, dest fileSpec, err error) {
	if src, err = parseFileSpec(o.Src); err != nil {
		return src, dest, err
	}
	if dest, err = parseFileSpec(o.Dest); err != nil {
		return src, dest, err
	}
	switch {
	case src.pod != "" && dest.pod != "":
		err = errors.New("one of src or dest must be a local file specification")
	case src.path == "" || dest.path == "":
		err = errors.New("filepath can not be empty")
	case src.pod == "" && dest.pod == "":
		err = errors.New("one of src or dest must be a remote file specification")
	}
	return src, dest, err
}

// Copy copies a local file or directory into a container, or one out of it,
// as `kubectl cp` does: through exec of the container's tar (which the image
// must have), with a tar stream on the exec's stdin or stdout. It returns the
// exit code of the container's tar (its stderr is passed through); a missing
// pod is a NotFoundError.
func Copy(ctx context.Context, o Options, s cmdutil.IOStreams) (int, error) {
	src, dest, err := o.specs()
	if err != nil {
		return -1, err
	}
	remote := src
	if dest.pod != "" {
		remote = dest
		if _, err := os.Stat(src.path); err != nil {
			return -1, fmt.Errorf("%s doesn't exist in local filesystem", src.path)
		}
	}
	if remote.namespace == "" {
		remote.namespace = o.Namespace
	}
	if err := cmdutil.ValidateNames(remote.namespace, remote.pod); err != nil {
		return -1, err
	}
	c := api.NewClient(o.Socket)
	t := podTarget{c: c, req: api.ExecRequest{Namespace: remote.namespace, Name: remote.pod, Container: o.Container}}
	if t.req.Container == "" {
		t.req.Container = cmdutil.DefaultContainer(ctx, c, remote.namespace, remote.pod, s)
	}
	var code int
	if dest.pod != "" {
		code, err = t.copyToPod(ctx, src.path, dest.path, o.NoPreserve, s)
	} else {
		code, err = t.copyFromPod(ctx, src.path, dest.path, s)
	}
	return code, cmdutil.PodNotFound(err, remote.pod)
}

// podTarget is the container a copy execs its commands in.
type podTarget struct {
	c   *api.Client
	req api.ExecRequest // namespace, name and container
}

// run execs cmd in the container; stdin nil: none.
func (t podTarget) run(ctx context.Context, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	req := t.req
	req.Command, req.Stdin = cmd, stdin != nil
	return t.c.Exec(ctx, req, stdin, stdout, stderr)
}

// isDir reports whether p is a directory in the container (kubectl's
// checkDestinationIsDir: `test -d`, any failure meaning no).
func (t podTarget) isDir(ctx context.Context, p string) bool {
	code, err := t.run(ctx, []string{"test", "-d", p}, nil, io.Discard, io.Discard)
	return err == nil && code == 0
}

// errExecEnded stops the local tar writer once the container's tar is gone.
var errExecEnded = errors.New("the container's tar ended")

// copyToPod sends src as a tar stream to `tar -xmf - -C DIR` in the
// container. As kubectl: into dest if dest is a directory there (under
// src's base name), else as dest itself.
func (t podTarget) copyToPod(ctx context.Context, src, dest string, noPreserve bool, s cmdutil.IOStreams) (int, error) {
	dest = remotePath(dest)
	if t.isDir(ctx, dest) {
		dest = path.Join(dest, filepath.Base(filepath.Clean(src)))
	}
	dest = path.Clean(dest)
	cmd := []string{"tar", "-xmf", "-"}
	if noPreserve {
		cmd = []string{"tar", "--no-same-permissions", "--no-same-owner", "-xmf", "-"}
	}
	cmd = append(cmd, "-C", path.Dir(dest))
	pr, pw := io.Pipe()
	tarDone := make(chan error, 1)
	go func() {
		err := makeTar(pw, src, path.Base(dest), s.ErrOut)
		pw.CloseWithError(err) // nil: EOF
		tarDone <- err
	}()
	code, err := t.run(ctx, cmd, pr, s.Out, s.ErrOut)
	pr.CloseWithError(errExecEnded)
	tarErr := <-tarDone
	switch {
	case err != nil:
		return -1, err
	case tarErr != nil && !errors.Is(tarErr, errExecEnded):
		return -1, tarErr
	}
	return code, nil
}

// copyFromPod extracts the tar stream of `tar cf - SRC` in the container
// into dest (see untar).
func (t podTarget) copyFromPod(ctx context.Context, src, dest string, s cmdutil.IOStreams) (int, error) {
	src = remotePath(src)
	// As kubectl: tar names the entries without the leading "/", and "../"
	// that would climb above "/" is dropped.
	prefix := stripPathShortcuts(path.Clean(strings.TrimLeft(src, "/")))
	pr, pw := io.Pipe()
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := t.run(ctx, []string{"tar", "cf", "-", src}, nil, pw, s.ErrOut)
		pw.Close()
		done <- result{code, err}
	}()
	untarErr := untar(pr, prefix, dest, s.ErrOut)
	if untarErr == nil {
		_, _ = io.Copy(io.Discard, pr) // the padding after the end of the archive
	}
	pr.CloseWithError(untarErr) // nil: the exec's writes fail with io.ErrClosedPipe
	res := <-done
	switch {
	case ctx.Err() != nil:
		return -1, ctx.Err()
	case res.err != nil && (untarErr == nil || !errors.Is(res.err, untarErr)): // not our closed pipe
		return -1, res.err
	case res.err == nil && res.code != 0:
		return res.code, nil
	case untarErr != nil:
		return -1, untarErr
	}
	return 0, nil
}

// remotePath is a path in the container as kubectl's newRemotePath cleans
// it: "\" as "/", without a trailing "/".
func remotePath(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}

// stripPathShortcuts removes the leading "../" of p, a lone "." or "..",
// and one leading "/" (kubectl's function of that name).
func stripPathShortcuts(p string) string {
	for strings.HasPrefix(p, "../") {
		p = strings.TrimPrefix(p, "../")
	}
	if p == "." || p == ".." {
		return ""
	}
	return strings.TrimPrefix(p, "/")
}
