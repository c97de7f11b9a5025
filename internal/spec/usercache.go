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
// holds for every container of it. Safe for concurrent use.
type UserCache struct {
	mu sync.Mutex
	m  map[userKey]specs.User
}

type userKey struct {
	image, user string
	groups      bool // the user's /etc/group entries are added
}

// NewUserCache returns an empty cache.
func NewUserCache() *UserCache { return &UserCache{m: map[userKey]specs.User{}} }

func (uc *UserCache) get(k userKey) (specs.User, bool) {
	uc.mu.Lock()
	defer uc.mu.Unlock()
	u, ok := uc.m[k]
	return u, ok
}

func (uc *UserCache) put(k userKey, u specs.User) {
	uc.mu.Lock()
	defer uc.mu.Unlock()
	if len(uc.m) >= userCacheMax {
		clear(uc.m)
	}
	uc.m[k] = u
}

// cachedUser applies resolve (the user and group options, which read the
// rootfs) unless the cache has their result for key; a result is kept only
// when resolving succeeded.
func cachedUser(uc *UserCache, key userKey, resolve []oci.SpecOpts) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		if u, ok := uc.get(key); ok {
			s.Process.User.UID, s.Process.User.GID, s.Process.User.Username = u.UID, u.GID, u.Username
			s.Process.User.AdditionalGids = slices.Clone(u.AdditionalGids)
			return nil
		}
		for _, o := range resolve {
			if err := o(ctx, client, c, s); err != nil {
				return err
			}
		}
		u := s.Process.User
		uc.put(key, specs.User{UID: u.UID, GID: u.GID, Username: u.Username, AdditionalGids: slices.Clone(u.AdditionalGids)})
		return nil
	}
}
