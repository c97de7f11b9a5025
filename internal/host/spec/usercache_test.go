package spec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	corev1 "k8s.io/api/core/v1"
)

// TestUserCache: an image's user is resolved in its rootfs once; later
// containers of the same image digest get the same uid, gid and groups
// without reading it (the rootfs below is rewritten in between), while
// another digest, another user string or a failed lookup read it again.
func TestUserCache(t *testing.T) {
	dir := rootfs(t)
	users := NewUserCache()
	gen := func(t *testing.T, digest, user string, supplemental ...int64) (uid, gid uint32, gids []uint32, err error) {
		t.Helper()
		p := testPod()
		p.Users = users
		if len(supplemental) > 0 {
			p.Pod.Spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroups: supplemental}
		}
		c := testContainer(p)
		c.Image.User, c.ImageDigest = user, digest
		opts, err := Build(p, c)
		if err != nil {
			t.Fatal(err)
		}
		ctx := namespaces.WithNamespace(context.Background(), "podhost")
		s, err := oci.GenerateSpecWithPlatform(ctx, nil, "linux/amd64", &containers.Container{ID: c.ID},
			append([]oci.SpecOpts{oci.WithRootFSPath(dir)}, opts...)...)
		if err != nil {
			return 0, 0, nil, err
		}
		return s.Process.User.UID, s.Process.User.GID, s.Process.User.AdditionalGids, nil
	}
	check := func(t *testing.T, digest, user string, wantUID, wantGID uint32, wantGids []uint32, supplemental ...int64) {
		t.Helper()
		uid, gid, gids, err := gen(t, digest, user, supplemental...)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "uid", uid, wantUID)
		eq(t, "gid", gid, wantGID)
		eq(t, "gids", gids, wantGids)
	}
	rewrite := func(passwd, group string) {
		t.Helper()
		for name, content := range map[string]string{"passwd": passwd, "group": group} {
			if err := os.WriteFile(filepath.Join(dir, "etc", name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	check(t, "sha256:a", "app", 1001, 1002, []uint32{1002, 1500})
	rewrite("app:x:2001:2002::/:/bin/sh\n", "app:x:2002:\n")
	check(t, "sha256:a", "app", 1001, 1002, []uint32{1002, 1500})       // cached
	check(t, "sha256:a", "app", 1001, 1002, []uint32{9, 1002, 1500}, 9) // supplementalGroups still added
	check(t, "sha256:b", "app", 2001, 2002, []uint32{2002})             // another image
	check(t, "sha256:a", "2001", 2001, 2002, []uint32{2002})            // another user string
	if _, _, _, err := gen(t, "sha256:c", "nobody"); err == nil {
		t.Fatal("unknown user resolved")
	}
	rewrite("nobody:x:65534:65534::/:/bin/sh\n", "nogroup:x:65534:\n")
	check(t, "sha256:c", "nobody", 65534, 65534, []uint32{65534}) // a failure is not kept
}

// TestUserCacheOneResolveAtATime: while a key is being resolved, another
// start of it waits instead of mounting the rootfs again and gets the
// result from the cache; after a failed resolve the next caller resolves
// for itself.
func TestUserCacheOneResolveAtATime(t *testing.T) {
	uc := NewUserCache()
	waits := make(chan struct{}, 4)
	uc.waiting = func() { waits <- struct{}{} }
	key := userKey{image: "sha256:a", user: "app"}
	entered, release := make(chan struct{}), make(chan struct{})
	fail := false
	resolve := []oci.SpecOpts{func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		entered <- struct{}{}
		<-release
		if fail {
			return errors.New("no /etc/passwd")
		}
		s.Process.User.UID = 7
		return nil
	}}
	run := func() <-chan uint32 {
		uid := make(chan uint32, 1)
		go func() {
			s := &oci.Spec{}
			if err := cachedUser(uc, key, resolve)(context.Background(), nil, nil, s); err != nil {
				uid <- 0
				return
			}
			uid <- s.Process.User.UID
		}()
		return uid
	}
	first := run()
	<-entered
	second := run()
	select { // the second start waits for the first's resolve
	case <-waits:
	case <-entered:
		t.Fatal("the second start resolved while the first was resolving")
	}
	release <- struct{}{}
	if uid := <-first; uid != 7 {
		t.Fatalf("first resolve: uid %d, want 7", uid)
	}
	select {
	case <-entered: // a waiter that resolved again would block here
		t.Fatal("the second start resolved the user again")
	case uid := <-second:
		if uid != 7 {
			t.Fatalf("second start: uid %d, want 7 from the cache", uid)
		}
	}

	// A failure is not shared: the waiter resolves for itself.
	key = userKey{image: "sha256:b", user: "app"}
	fail = true
	first = run()
	<-entered
	second = run()
	<-waits
	release <- struct{}{}
	if uid := <-first; uid != 0 {
		t.Fatalf("failed resolve: uid %d", uid)
	}
	<-entered
	fail = false
	release <- struct{}{}
	if uid := <-second; uid != 7 {
		t.Fatalf("waiter after a failure: uid %d, want 7", uid)
	}
}
