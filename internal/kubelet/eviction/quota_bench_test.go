package eviction

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/fsquota"
	"github.com/podhost/podhost/internal/host/state"
)

// BenchmarkEmptyDirMeasure: what one look spends on 100 disk emptyDirs of
// 10 files (4 KiB) each, in the same run: walk (DiskUsage, as every
// emptyDir without a project ID) and quota (fsquota.Manager.Usage: one
// ioctl and one quotactl each). Needs PODHOST_TEST_PRJQUOTA_DIR, a
// directory on a filesystem mounted with project quotas (this project's
// machines' kernel has none: scripts/vm/fsquota-check.sh runs it in the
// VM); skipped without it.
func BenchmarkEmptyDirMeasure(b *testing.B) {
	root := os.Getenv("PODHOST_TEST_PRJQUOTA_DIR")
	if root == "" {
		b.Skip("PODHOST_TEST_PRJQUOTA_DIR (a directory on ext4 or XFS mounted prjquota) is not set")
	}
	db, err := state.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	q, err := fsquota.New(db, fsquota.Options{Reserved: []string{}})
	if err != nil {
		b.Fatal(err)
	}
	const n = 100
	no := false
	dirs, uids := make([]string, n), make([]types.UID, n)
	for i := range n {
		p := &corev1.Pod{}
		p.Name, p.Namespace, p.UID, p.Spec.HostUsers = fmt.Sprintf("p%d", i), "default", types.UID(fmt.Sprintf("uid-%d", i)), &no
		uids[i], dirs[i] = p.UID, filepath.Join(root, "bench", string(p.UID))
		if err := os.MkdirAll(dirs[i], 0o777); err != nil {
			b.Fatal(err)
		}
		if m := q.Assign(p, "v", dirs[i]); m != fsquota.MethodQuota {
			b.Fatalf("%s measured by %s", dirs[i], m)
		}
		for f := range 10 {
			if err := os.WriteFile(filepath.Join(dirs[i], fmt.Sprint(f)), make([]byte, 4096), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("walk", func(b *testing.B) {
		for range b.N {
			for _, d := range dirs {
				if u, err := DiskUsage(d); err != nil || u.Inodes != 11 {
					b.Fatalf("%s: %+v, %v", d, u, err)
				}
			}
		}
	})
	b.Run("quota", func(b *testing.B) {
		for range b.N {
			for _, uid := range uids {
				if _, in, ok, err := q.Usage(uid, "v"); !ok || err != nil || in != 11 {
					b.Fatalf("%s: %d inodes, %v, %v", uid, in, ok, err)
				}
			}
		}
	})
}
