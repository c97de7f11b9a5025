package admission

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const gi = int64(1) << 30

// Allocatable as the kubelet's node status: capacity minus reserved minus
// the default hard eviction thresholds (memory.available<100Mi,
// nodefs.available<10%), memory minus the huge pages.
func TestAllocatableReservations(t *testing.T) {
	tests := []struct {
		name              string
		meminfo, rootDir  string
		reserved          corev1.ResourceList
		wantMem, wantDisk string // "" = absent
	}{
		{"eviction threshold", "MemTotal: 4194304 kB\n", "", nil, "3996Mi", ""},
		{"reserved and eviction", "MemTotal: 4194304 kB\n", "", corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}, "2972Mi", ""},
		{"hugetlb", "MemTotal: 4194304 kB\nHugePages_Total: 4\nHugepagesize: 2048 kB\nHugetlb: 1048576 kB\n", "", nil, "2972Mi", ""},
		{"hugepages without hugetlb", "MemTotal: 4194304 kB\nHugePages_Total: 512\nHugepagesize: 2048 kB\n", "", nil, "2972Mi", ""},
		{"below zero", "MemTotal: 51200 kB\n", "", nil, "0", ""},
		{"ephemeral-storage", "MemTotal: 4194304 kB\n", "/var/lib/podhost", nil, "3996Mi", "90Gi"},
		{"ephemeral-storage reserved", "MemTotal: 4194304 kB\n", "/var/lib/podhost",
			corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("10Gi")}, "3996Mi", "80Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Host{NumCPU: func() int { return 2 }, MemInfo: func() ([]byte, error) { return []byte(tt.meminfo), nil },
				RootDir: tt.rootDir, StatFS: func(path string) (int64, error) {
					if path != "/var/lib/podhost" {
						t.Fatalf("statfs %q", path)
					}
					return 100 * gi, nil
				}}
			alloc, err := h.Allocatable(tt.reserved)
			if err != nil {
				t.Fatal(err)
			}
			if got := alloc[corev1.ResourceMemory]; got.Cmp(resource.MustParse(tt.wantMem)) != 0 {
				t.Errorf("memory %s, want %s", got.String(), tt.wantMem)
			}
			got, ok := alloc[corev1.ResourceEphemeralStorage]
			if tt.wantDisk == "" && ok || tt.wantDisk != "" && (!ok || got.Cmp(resource.MustParse(tt.wantDisk)) != 0) {
				t.Errorf("ephemeral-storage %s (present %v), want %q", got.String(), ok, tt.wantDisk)
			}
		})
	}
}

func TestEphemeralStorageCapacityError(t *testing.T) {
	h := fakeHost()
	h.RootDir, h.StatFS = "/nowhere", func(string) (int64, error) { return 0, errors.New("no such file or directory") }
	if _, err := h.Capacity(); err == nil {
		t.Fatal("want the statfs error")
	}
}

func TestFSSizeOfRealDir(t *testing.T) {
	size, err := fsSize(t.TempDir())
	if err != nil || size <= 0 {
		t.Fatalf("fsSize = %d, %v", size, err)
	}
}

// ephemeral-storage requests are checked against allocatable with the
// kubelet's reason and message (pkg/kubelet/lifecycle/predicate.go).
func TestAdmitEphemeralStorage(t *testing.T) {
	h := Host{NumCPU: func() int { return 2 }, MemInfo: func() ([]byte, error) { return []byte("MemTotal: 4194304 kB\n"), nil },
		RootDir: "/var/lib/podhost", StatFS: func(string) (int64, error) { return 10 * gi, nil }}
	alloc, err := h.Allocatable(nil)
	if err != nil {
		t.Fatal(err)
	}
	withDisk := func(q string) *corev1.Pod {
		p := pod("", "")
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse(q)
		return p
	}
	if r := Admit(withDisk("7Gi"), alloc, []*corev1.Pod{withDisk("3Gi")}); r.Admit || r.Reason != "OutOfephemeral-storage" ||
		r.Message != "Node didn't have enough resource: ephemeral-storage, requested: 7516192768, used: 3221225472, capacity: 9663676416" {
		t.Fatalf("7Gi next to 3Gi of 9Gi: %+v", r)
	}
	if r := Admit(withDisk("5Gi"), alloc, nil); !r.Admit {
		t.Fatalf("5Gi of 9Gi: %+v", r)
	}
}

// Enforced as the kubelet's getNodeAllocatableAbsolute: capacity minus
// reserved, memory minus the huge pages, without the eviction thresholds;
// cpu and memory only. A reservation beyond capacity is refused, as the
// kubelet's validateNodeAllocatable refuses it.
func TestEnforced(t *testing.T) {
	tests := []struct {
		name             string
		meminfo          string
		reserved         corev1.ResourceList
		wantCPU, wantMem string // wantCPU "" = an error
	}{
		{"nothing reserved", "MemTotal: 4194304 kB\n", nil, "2", "4Gi"},
		{"reserved", "MemTotal: 4194304 kB\n", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}, "1500m", "3Gi"},
		{"hugetlb", "MemTotal: 4194304 kB\nHugetlb: 1048576 kB\n", nil, "2", "3Gi"},
		{"cpu beyond capacity", "MemTotal: 4194304 kB\n", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}, "", ""},
		{"memory and eviction beyond capacity", "MemTotal: 4194304 kB\n", corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4000Mi")}, "", ""},
		{"ephemeral-storage beyond capacity", "MemTotal: 4194304 kB\n", corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("95Gi")}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Host{NumCPU: func() int { return 2 }, MemInfo: func() ([]byte, error) { return []byte(tt.meminfo), nil },
				RootDir: "/var/lib/podhost", StatFS: func(string) (int64, error) { return 100 * gi, nil }}
			got, err := h.Enforced(tt.reserved)
			if tt.wantCPU == "" {
				if err == nil {
					t.Fatalf("want an error, got %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got.Cpu().Cmp(resource.MustParse(tt.wantCPU)) != 0 || got.Memory().Cmp(resource.MustParse(tt.wantMem)) != 0 {
				t.Errorf("enforced %v, want cpu %s memory %s only", got, tt.wantCPU, tt.wantMem)
			}
		})
	}
}
