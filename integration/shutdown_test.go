//go:build integration

package integration

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/daemon"
	"github.com/podhost/podhost/internal/host/state"
)

// The daemon, run in-process and cancelled, ends every goroutine it started
// (goleak) and leaves the last status of its pod in bbolt; the pod keeps
// running and the next (real) daemon adopts it.
func TestDaemonShutdownLeavesNoGoroutine(t *testing.T) {
	d := newPodhostd(t)
	d.writeManifest("web.yaml", `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+env.ImageRef+`
    imagePullPolicy: Never
    command: ["sleep", "1000"]
`)
	cfg := config.Default()
	cfg.ManifestDir, cfg.StateDir, cfg.LogDir, cfg.Socket = d.manifestDir, d.stateDir, d.logDir, d.socket
	cfg.RunDir = filepath.Join(env.RunDir, filepath.Base(d.dir))
	cfg.ContainerdAddress, cfg.Namespace = env.Address, env.Namespace
	cfg.CNIConfDir, cfg.CNIBinDirs = env.CNIConfDir, env.CNIBinDirs
	cfg.CgroupDriver, cfg.CgroupParent, cfg.RelistPeriod = "cgroupfs", d.cgroupRoot, 5*time.Second
	cfg.LogDriver = env.LogDriverBin

	ignore := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- daemon.Run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	pod := d.waitRunning("web")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("daemon.Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("daemon.Run did not return within 30 s of its cancellation")
	}
	goleak.VerifyNone(t, ignore)

	db, err := state.Open(filepath.Join(d.stateDir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := db.GetStatus(pod.UID)
	db.Close()
	if err != nil || st.Phase != corev1.PodRunning || len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].ContainerID == "" {
		t.Fatalf("last status in bbolt: %+v, %v", st, err)
	}
	// The pod still runs: the real daemon adopts it (same container) and
	// the test's cleanup tears it down.
	d.start()
	if got := d.waitRunning("web"); got.Status.ContainerStatuses[0].ContainerID != st.ContainerStatuses[0].ContainerID {
		t.Fatalf("container %s after restart, want %s", got.Status.ContainerStatuses[0].ContainerID, st.ContainerStatuses[0].ContainerID)
	}
}
