//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
)

// Helpers shared by the integration tests. They take the test's context,
// fail the test on error and register their own cleanup.

// testCtx returns a context in the Env's containerd namespace that ends
// with the test (or after timeout).
func testCtx(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(env.Context(t.Context()), timeout)
	t.Cleanup(cancel)
	return ctx
}

var idSeq atomic.Int64

// uniqueID returns a containerd-safe ID unique within the test binary.
func uniqueID(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), idSeq.Add(1))
}

// testImage imports the test image (env.ImageTar) into the private
// containerd through the client, unpacks it for env.Snapshotter and returns
// it. Importing again is cheap (content is already there).
func testImage(t testing.TB) client.Image {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	c := env.Client()
	f, err := os.Open(env.ImageTar)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	imgs, err := c.Import(ctx, f)
	if err != nil {
		t.Fatalf("import %s: %v", env.ImageTar, err)
	}
	if len(imgs) != 1 || imgs[0].Name != env.ImageRef {
		t.Fatalf("import %s: got images %v, want exactly %s", env.ImageTar, imgNames(imgs), env.ImageRef)
	}
	img := client.NewImage(c, imgs[0])
	if err := img.Unpack(ctx, env.Snapshotter); err != nil {
		t.Fatalf("unpack %s: %v", env.ImageRef, err)
	}
	return img
}

func imgNames(imgs []images.Image) []string {
	var out []string
	for _, i := range imgs {
		out = append(out, i.Name)
	}
	return out
}

// newContainer creates a container from img running args, with a spec safe
// for this machine (containerd's default spec: no negative oom_score_adj,
// RLIMIT_NOFILE 1024) and its cgroup under env.CgroupPrefix. It is deleted
// (task and snapshot included) when the test ends.
func newContainer(t testing.TB, img client.Image, id string, args []string, opts ...oci.SpecOpts) client.Container {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	specOpts := append([]oci.SpecOpts{
		oci.WithImageConfig(img),
		oci.WithProcessArgs(args...),
		oci.WithCgroup(env.CgroupPrefix + "/" + id),
	}, opts...)
	ctr, err := env.Client().NewContainer(ctx, id,
		client.WithImage(img),
		client.WithSnapshotter(env.Snapshotter),
		client.WithNewSnapshot(id+"-snapshot", img),
		client.WithNewSpec(specOpts...),
	)
	if err != nil {
		t.Fatalf("create container %s: %v", id, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(env.Context(context.Background()), 30*time.Second)
		defer cancel()
		if task, err := ctr.Task(ctx, nil); err == nil {
			if _, err := task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
				t.Errorf("delete task %s: %v", id, err)
			}
		}
		if err := ctr.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
			t.Errorf("delete container %s: %v", id, err)
		}
	})
	return ctr
}

// runToCompletion starts a task for ctr with its stdout and stderr in
// buffers, waits for it to exit and returns the output and exit code.
func runToCompletion(t testing.TB, ctr client.Container) (stdout, stderr string, code uint32) {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	var outBuf, errBuf bytes.Buffer
	task, err := ctr.NewTask(ctx, cio.NewCreator(cio.WithStreams(nil, &outBuf, &errBuf)))
	if err != nil {
		t.Fatalf("new task %s: %v", ctr.ID(), err)
	}
	exitCh, err := task.Wait(ctx)
	if err != nil {
		t.Fatalf("wait %s: %v", ctr.ID(), err)
	}
	if err := task.Start(ctx); err != nil {
		t.Fatalf("start %s: %v", ctr.ID(), err)
	}
	var st client.ExitStatus
	select {
	case st = <-exitCh:
	case <-ctx.Done():
		t.Fatalf("task %s did not exit: %v", ctr.ID(), ctx.Err())
	}
	code, _, err = st.Result()
	if err != nil {
		t.Fatalf("task %s: %v", ctr.ID(), err)
	}
	// The process is gone: wait until its output is copied, then delete.
	_ = task.CloseIO(ctx)
	task.IO().Wait()
	if _, err := task.Delete(ctx); err != nil {
		t.Fatalf("delete task %s: %v", ctr.ID(), err)
	}
	return outBuf.String(), errBuf.String(), code
}

// ctr runs the cached ctr binary against the private containerd.
func ctr(t testing.TB, args ...string) string {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	cmd := exec.CommandContext(ctx, env.BinDir+"/ctr",
		append([]string{"--address", env.Address, "--namespace", env.Namespace}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
