package state

import (
	"fmt"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/model/records"
)

func benchSandbox(i int) records.SandboxRecord {
	id := fmt.Sprintf("sb-%06d", i)
	return records.SandboxRecord{
		ID: id, PodUID: "uid-" + "x", FullName: "default/web", State: records.SandboxReady,
		NetNS: "/run/podhost/netns/" + id, IPC: "/run/podhost/ipc/" + id, UTS: "/run/podhost/uts/" + id,
		CNIResult: make([]byte, 512), IPs: []string{"10.88.0.2"},
		Ports:     []records.PortMapping{{HostPort: 8080, ContainerPort: 80, Protocol: "TCP"}},
		CreatedAt: time.Now(),
	}
}

func BenchmarkPutSandbox(b *testing.B) {
	db := openTest(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := db.PutSandbox(benchSandbox(i % 64)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkListSandboxes(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			db := openTest(b)
			err := db.Update(func(tx *Tx) error {
				for i := range n {
					if err := tx.PutSandbox(benchSandbox(i)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				list, err := db.ListSandboxes()
				if err != nil || len(list) != n {
					b.Fatalf("ListSandboxes = %d, %v", len(list), err)
				}
			}
		})
	}
}
