package spec

import (
	"context"
	"slices"
	"sync"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// userCacheMax bounds a UserCache: past it the cache starts over.
const userCacheMax = 256

// UserCache keeps what a user string resolved to in an image's rootfs:
// uid, gid and groups. Resolving reads the rootfs' /etc/passwd and
// /etc/group, and containerd's oci.WithUser and oci.WithAdditionalGIDs each
// mount the new container's snapshot for that (a Mounts call, mount(2),
// umount(2)): two temporary mounts for every container start. A new
// container's rootfs is its image's, so the answer for one image digest
// holds for every container of it. Starts that ask for the same key while
// it is being resolved wait for that one (a cold start asks for it from
// every pod at once). Safe for concurrent use.
type UserCache struct {
	mu   sync.Mutex
	m    map[userKey]specs.User
	busy map[userKey]chan struct{} // keys being resolved, closed when done
	// waiting, when set (tests), is called when a caller starts to wait
	// for another's resolve.
	waiting func()
}

type userKey struct {
	image, user string
	groups      bool // the user's /etc/group entries are added
}

// NewUserCache returns an empty cache.
func NewUserCache() *UserCache {
	return &UserCache{m: map[userKey]specs.User{}, busy: map[userKey]chan struct{}{}}
}

// lookup returns k's cached user (ok), or a channel to wait on while
// another caller resolves k, or neither: the caller resolves k and must
// call done.
func (uc *UserCache) lookup(k userKey) (u specs.User, ok bool, wait <-chan struct{}) {
	uc.mu.Lock()
	defer uc.mu.Unlock()
	if u, ok := uc.m[k]; ok {
		return u, true, nil
	}
	if ch, busy := uc.busy[k]; busy {
		return specs.User{}, false, ch
	}
	uc.busy[k] = make(chan struct{})
	return specs.User{}, false, nil
}

// done ends the resolution of k that lookup handed out, keeping u when it
// is not nil (resolving succeeded); the waiters look again.
func (uc *UserCache) done(k userKey, u *specs.User) {
	uc.mu.Lock()
	defer uc.mu.Unlock()
	if u != nil {
		if len(uc.m) >= userCacheMax {
			clear(uc.m)
		}
		uc.m[k] = *u
	}
	close(uc.busy[k])
	delete(uc.busy, k)
}

// claim waits until k is cached or is this caller's to resolve.
func (uc *UserCache) claim(ctx context.Context, k userKey) (u specs.User, ok bool, err error) {
	for {
		u, ok, wait := uc.lookup(k)
		if ok || wait == nil {
			return u, ok, nil
		}
		if uc.waiting != nil {
			uc.waiting()
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return specs.User{}, false, ctx.Err()
		}
	}
}

// cachedUser applies resolve (the user and group options, which read the
// rootfs) unless the cache has their result for key; a result is kept only
// when resolving succeeded (after a failure a waiter resolves for itself).
func cachedUser(uc *UserCache, key userKey, resolve []oci.SpecOpts) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *oci.Spec) (err error) {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		u, ok, err := uc.claim(ctx, key)
		if err != nil {
			return err
		}
		if ok {
			s.Process.User.UID, s.Process.User.GID, s.Process.User.Username = u.UID, u.GID, u.Username
			s.Process.User.AdditionalGids = slices.Clone(u.AdditionalGids)
			return nil
		}
		var got *specs.User
		defer func() { uc.done(key, got) }()
		for _, o := range resolve {
			if err := o(ctx, client, c, s); err != nil {
				return err
			}
		}
		r := s.Process.User
		got = &specs.User{UID: r.UID, GID: r.GID, Username: r.Username, AdditionalGids: slices.Clone(r.AdditionalGids)}
		return nil
	}
}
