package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"

	"github.com/podhost/podhost/internal/logs"
)

func main() {
	ctx := namespaces.WithNamespace(context.Background(), "tmpbench")
	c, err := client.New("/run/podhost-dev/containerd.sock")
	if err != nil {
		panic(err)
	}
	img, err := c.GetImage(ctx, "podhost.test/busybox:1")
	if err != nil {
		panic(err)
	}
	mode := os.Args[1]
	var creates, starts, totals []time.Duration
	var keep []client.Task
	var ctrs []client.Container
	for i := 0; i < 8; i++ {
		id := fmt.Sprintf("tb-%s-%d", mode, i)
		opts := []oci.SpecOpts{oci.WithImageConfig(img), oci.WithProcessArgs("sleep", "3600")}
		if mode == "group" || mode == "grouplog" {
			opts = append(opts, oci.WithAnnotations(map[string]string{"io.containerd.runc.v2.group": "tbgroup"}))
		}
		copts := []client.NewContainerOpts{client.WithImage(img), client.WithNewSnapshot(id, img), client.WithNewSpec(opts...)}
		if mode == "podspec" {
			var sp oci.Spec
			b, _ := os.ReadFile("/tmp/podspec.json")
			if err := json.Unmarshal(b, &sp); err != nil {
				panic(err)
			}
			sp.Linux.CgroupsPath = "/podhost/tb/" + id
			copts = []client.NewContainerOpts{client.WithImage(img), client.WithNewSnapshot(id, img), client.WithSpec(&sp)}
		}
		t0 := time.Now()
		ctr, err := c.NewContainer(ctx, id, copts...)
		if err != nil {
			panic(err)
		}
		ctrs = append(ctrs, ctr)
		t1 := time.Now()
		io := cio.NullIO
		if mode == "log" || mode == "grouplog" || mode == "podspec" {
			io = cio.BinaryIO("/work/main/bin/podhost-log-driver", logs.DriverArgs(logs.DriverConfig{Path: "/tmp/tb/" + id + ".log", MaxSize: 10 << 20, MaxFiles: 5}))
		}
		task, err := ctr.NewTask(ctx, io)
		if err != nil {
			panic(err)
		}
		t2 := time.Now()
		if err := task.Start(ctx); err != nil {
			panic(err)
		}
		t3 := time.Now()
		keep = append(keep, task)
		creates, starts, totals = append(creates, t2.Sub(t1)), append(starts, t3.Sub(t2)), append(totals, t3.Sub(t0))
	}
	for _, t := range keep {
		t.Delete(ctx, client.WithProcessKill)
	}
	for _, ct := range ctrs {
		ct.Delete(ctx, client.WithSnapshotCleanup)
	}
	med := func(d []time.Duration) time.Duration { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }); return d[len(d)/2] }
	fmt.Printf("%-9s newtask %6.1fms start %6.1fms total %6.1fms (first newtask %.1fms)\n", mode, ms(med(creates)), ms(med(starts)), ms(med(totals)), ms(creates[0]))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
