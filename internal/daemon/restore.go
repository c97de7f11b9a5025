package daemon

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/podhost/podhost/internal/host/state"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/kubelet/status"
	"github.com/podhost/podhost/internal/model/records"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// What a start picks up from the previous podhost: the boot it ran in, the
// pods it had admitted, and the terminations it had begun.

// checkBoot compares the kernel's boot id with the recorded one. A new boot
// means every sandbox podhost recorded is gone; the syncer recreates them
// (CNI DEL with the cached result first) when it next syncs each pod.
func checkBoot(db *state.DB, log *slog.Logger) (boot string, rebooted bool, err error) {
	boot, err = bootID()
	if err != nil {
		return "", false, fmt.Errorf("read boot id: %w", err)
	}
	prev, err := db.BootID()
	if err != nil {
		return "", false, err
	}
	if prev != boot {
		if prev != "" {
			log.Info("boot id changed: host rebooted, every sandbox will be recreated", "previous", prev, "current", boot)
		}
		if err := db.SetBootID(boot); err != nil {
			return "", false, err
		}
	}
	return boot, prev != "" && prev != boot, nil
}

func previouslyAdmitted(db *state.DB) (map[types.UID]bool, error) {
	allocs, err := db.ListAllocations()
	if err != nil {
		return nil, err
	}
	out := make(map[types.UID]bool, len(allocs))
	for _, a := range allocs {
		out[a.UID] = true
	}
	return out, nil
}

// remainingGrace is what is left of a termination's grace period since it
// was recorded (at least 1 s, the pod workers' minimum): a termination that
// a crash interrupted (its preStop hook may have run already and runs
// again) does not get a whole new grace period.
func remainingGrace(r records.WorkerRecord, now time.Time) int64 {
	if r.UpdatedAt.IsZero() || now.Before(r.UpdatedAt) {
		return max(r.GracePeriod, 1)
	}
	return max(r.GracePeriod-int64(now.Sub(r.UpdatedAt)/time.Second), 1)
}

// restoreWorkers resumes terminations that a previous podhost had begun: a
// worker recorded as terminating is seeded straight into terminating with
// its grace period (before any desired pod is added, as the pod workers
// require). Other records are dropped: workers rewrite them as they start.
// So is, after a reboot, the record of a pod a node shutdown was
// terminating: nothing of it runs any more, and resuming the termination
// would end a pod whose manifest still wants it (it starts again instead;
// its leftover sandbox is recreated like every other after a reboot).
func restoreWorkers(db *state.DB, w *podworkers.PodWorkers, shown terminatingShown, rebooted bool, log *slog.Logger) error {
	recs, err := db.ListWorkers()
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Phase != records.PhaseTerminating || len(r.Pod) == 0 || (rebooted && terminatedByShutdown(db, r.UID)) {
			if err := db.DeleteWorker(r.UID); err != nil {
				return err
			}
			continue
		}
		var pod corev1.Pod
		if err := json.Unmarshal(r.Pod, &pod); err != nil {
			log.Warn("drop unreadable worker record", "podUID", string(r.UID), "err", err)
			_ = db.DeleteWorker(r.UID)
			continue
		}
		grace := remainingGrace(r, time.Now())
		log.Info("resuming pod termination", "pod", r.FullName, "podUID", string(r.UID), "gracePeriod", grace, "recorded", r.GracePeriod)
		shown.RestoreTerminating(&pod, r.UpdatedAt) // the API shows it Terminating until it finished
		w.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodKill, Pod: &pod, GracePeriodOverride: &grace})
	}
	return nil
}

// terminatingShown is the manager's view of terminating pods.
type terminatingShown interface {
	RestoreTerminating(pod *corev1.Pod, since time.Time)
}

// terminatedByShutdown: the pod's last status says a node shutdown ended it.
func terminatedByShutdown(db *state.DB, uid types.UID) bool {
	st, err := db.GetStatus(uid)
	return err == nil && status.IsNodeShutdown(st)
}
