// Package recovery rebuilds podhost's state db from what the host shows
// when the db is fresh (deleted, or moved aside as damaged by
// state.OpenRecover) while containerd still runs podhost's containers.
//
// Without it a fresh db has no sandbox record for a running pod, so the
// syncer would plan a new sandbox and kill every running container. From
// the containers' labels (pod UID, name, sandbox id), the pinned namespaces
// under the run dir, libcni's result cache and the pod cgroups, Rebuild
// writes back for every sandbox a running container uses: a Ready sandbox
// record with its namespace paths, CNI result, IPs and ports; the
// allocation checkpoint of each pod whose manifest is known (so admission
// keeps preferring it); and the boot id. The syncer then adopts the
// containers as they are: no restart, no second CNI ADD, the same lease.
//
// What cannot be rebuilt (events, last statuses, crash-loop back-off,
// restart counts beyond the container labels) is listed in
// docs/robustness.md.
package recovery

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/cgroups"
	"github.com/podhost/podhost/internal/kubelet/resize"
	"github.com/podhost/podhost/internal/kubelet/userns"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// EventReason is the reason of the Warning event recorded on every adopted pod.
const EventReason = "StateRebuilt"

// Runtime lists podhost's containers (runtime.Runtime).
type Runtime interface {
	ListPods(ctx context.Context) ([]*podstate.Pod, error)
}

// Cgroups lists the pod cgroups that exist (cgroups.Manager).
type Cgroups interface {
	ListPods(ctx context.Context) ([]cgroups.PodCgroup, error)
}

// Store is the part of state.DB a rebuild writes.
type Store interface {
	ListSandboxes() ([]records.SandboxRecord, error)
	PutSandbox(records.SandboxRecord) error
	PutAllocations([]records.Allocation) error
	// PutUserNS writes back the user namespace range of a pod with
	// hostUsers: false (from its containers' podhost.io/userns label).
	PutUserNS(records.UserNSRecord) error
	SetBootID(string) error
	AddEvent(uid types.UID, e records.Event) error
}

// Config of a rebuild.
type Config struct {
	RunDir      string // sandboxes/<id>, netns/<id> below it
	CNICacheDir string // libcni result cache (results/ below it)
	BootID      string // the current boot
	// Pods returns the desired pods by UID (the manifest dir); nil or an
	// error means no spec is known: ports then come from the CNI cache
	// and no allocation is written.
	Pods func() (map[types.UID]*corev1.Pod, error)
	// Pinned tells whether path is a pinned namespace (sandbox.Exists).
	Pinned func(path string) bool
	// Why is said in the event and log ("state db damaged: ..., kept at ...").
	Why    string
	Now    func() time.Time
	Logger *slog.Logger
}

// Result is what a rebuild wrote.
type Result struct {
	Sandboxes   int         // sandbox records written
	Allocations int         // allocation checkpoints written
	Pods        []types.UID // pods that got a Warning event
}

// Rebuild writes back what the db s lost, from the running containers: a
// record for every sandbox that a running container references and that has
// none (all of them in a fresh db; none in an intact one, so it is cheap to
// call on every start, and a start after a rebuild that failed half way
// finishes it). It never touches a container, a namespace or a lease.
func Rebuild(ctx context.Context, cfg Config, rt Runtime, cg Cgroups, s Store) (Result, error) {
	cfg = withDefaults(cfg)
	var res Result
	if err := s.SetBootID(cfg.BootID); err != nil {
		return res, fmt.Errorf("rebuild: boot id: %w", err)
	}
	have, err := s.ListSandboxes()
	if err != nil {
		return res, fmt.Errorf("rebuild: list sandboxes: %w", err)
	}
	rpods, err := rt.ListPods(ctx)
	if err != nil {
		return res, fmt.Errorf("rebuild: list runtime pods: %w", err)
	}
	missing := missingSandboxes(rpods, have)
	if len(missing) == 0 {
		return res, nil
	}
	in, err := gather(ctx, cfg, cg)
	if err != nil {
		return res, err
	}
	var allocs []records.Allocation
	for _, rp := range rpods {
		recs := sandboxRecords(cfg, rp, in, missing)
		if len(recs) == 0 {
			continue
		}
		for _, r := range recs {
			if err := s.PutSandbox(r); err != nil {
				return res, fmt.Errorf("rebuild: sandbox %s: %w", r.ID, err)
			}
			res.Sandboxes++
		}
		if uns := recs[len(recs)-1].UserNS; uns != nil {
			if err := s.PutUserNS(*uns); err != nil {
				return res, fmt.Errorf("rebuild: user namespace of %s: %w", rp.FullName(), err)
			}
		}
		if pod := in.pods[rp.UID]; pod != nil {
			allocs = append(allocs, resize.Checkpoint(pod))
		}
		res.Pods = append(res.Pods, rp.UID)
		cfg.Logger.Warn("state rebuilt for running pod", "pod", rp.FullName(), "podUID", string(rp.UID),
			"sandboxes", len(recs), "ips", recs[len(recs)-1].IPs, "specKnown", in.pods[rp.UID] != nil)
	}
	if len(allocs) > 0 {
		if err := s.PutAllocations(allocs); err != nil {
			return res, fmt.Errorf("rebuild: allocations: %w", err)
		}
		res.Allocations = len(allocs)
	}
	msg := "podhost state was rebuilt from the running containers; the pod was adopted as it runs"
	if cfg.Why != "" {
		msg += " (" + cfg.Why + ")"
	}
	for _, uid := range res.Pods {
		ev := records.Event{Time: cfg.Now(), Type: corev1.EventTypeWarning, Reason: EventReason, Message: msg}
		if err := s.AddEvent(uid, ev); err != nil {
			return res, fmt.Errorf("rebuild: event: %w", err)
		}
	}
	return res, nil
}

func withDefaults(cfg Config) Config {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Pinned == nil {
		cfg.Pinned = func(string) bool { return false }
	}
	return cfg
}

// inputs are the host observations shared by every pod of a rebuild.
type inputs struct {
	cni    map[string]*cniSandbox
	cgroup map[types.UID]string
	pods   map[types.UID]*corev1.Pod
}

func gather(ctx context.Context, cfg Config, cg Cgroups) (inputs, error) {
	in := inputs{cgroup: map[types.UID]string{}, pods: map[types.UID]*corev1.Pod{}}
	var err error
	if in.cni, err = readCNICache(cfg.CNICacheDir); err != nil {
		return in, fmt.Errorf("rebuild: %w", err)
	}
	pcs, err := cg.ListPods(ctx)
	if err != nil {
		return in, fmt.Errorf("rebuild: list pod cgroups: %w", err)
	}
	for _, pc := range pcs {
		in.cgroup[pc.UID] = pc.Name
	}
	if cfg.Pods != nil {
		if pods, err := cfg.Pods(); err != nil {
			cfg.Logger.Warn("rebuild: manifests not readable; ports from the CNI cache, no allocations", "err", err)
		} else if pods != nil {
			in.pods = pods
		}
	}
	return in, nil
}

// missingSandboxes are the sandbox ids that a running container references
// and no record holds.
func missingSandboxes(rpods []*podstate.Pod, have []records.SandboxRecord) map[string]bool {
	known := make(map[string]bool, len(have))
	for _, r := range have {
		known[r.ID] = true
	}
	out := map[string]bool{}
	for _, rp := range rpods {
		for _, c := range rp.Running() {
			if c.SandboxID != "" && !known[c.SandboxID] {
				out[c.SandboxID] = true
			}
		}
	}
	return out
}

// sandboxRecords makes one Ready record per missing sandbox id of rp;
// CreatedAt is its oldest container (exited ones included); ordered by it.
func sandboxRecords(cfg Config, rp *podstate.Pod, in inputs, missing map[string]bool) []records.SandboxRecord {
	oldest := map[string]time.Time{}
	for _, c := range rp.Containers {
		if !missing[c.SandboxID] {
			continue
		}
		if t, ok := oldest[c.SandboxID]; !ok || c.CreatedAt.Before(t) {
			oldest[c.SandboxID] = c.CreatedAt
		}
	}
	pod := in.pods[rp.UID]
	out := make([]records.SandboxRecord, 0, len(oldest))
	for id, created := range oldest {
		out = append(out, sandboxRecord(cfg, rp, pod, id, created, in))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

func sandboxRecord(cfg Config, rp *podstate.Pod, pod *corev1.Pod, id string, created time.Time, in inputs) records.SandboxRecord {
	dir := filepath.Join(cfg.RunDir, "sandboxes", id)
	r := records.SandboxRecord{
		ID: id, PodUID: rp.UID, FullName: rp.FullName(), State: records.SandboxReady,
		Dir: dir, Cgroup: in.cgroup[rp.UID], CreatedAt: created,
	}
	r.NetNS = pinnedNetNS(cfg, id)
	for _, ns := range []struct {
		dst  *string
		name string
	}{{&r.IPC, "ipc"}, {&r.UTS, "uts"}, {&r.PID, "pid"}} {
		if p := filepath.Join(dir, ns.name); cfg.Pinned(p) {
			*ns.dst = p
		}
	}
	if p := filepath.Join(dir, "user"); cfg.Pinned(p) {
		r.User = p
	}
	r.UserNS = userNSOf(rp, id)
	if c := in.cni[id]; c != nil {
		r.CNIResult, r.IPs, r.Ports = c.Raw, c.IPs, c.Ports
	}
	if pod != nil && !pod.Spec.HostNetwork {
		r.Ports = specPorts(pod)
	}
	hostNet := pod != nil && pod.Spec.HostNetwork && dirExists(dir)
	if r.NetNS != "" || hostNet {
		// Usable in this boot: the syncer adopts it. Otherwise it stays
		// without a boot id, and the syncer tears it down and makes a new one.
		r.BootID = cfg.BootID
	}
	return r
}

// userNSOf reads the user namespace range of sandbox id from its
// containers' podhost.io/userns label (nil: the host's user namespace).
func userNSOf(rp *podstate.Pod, id string) *records.UserNSRecord {
	for _, c := range rp.Containers {
		v, ok := c.Labels[wellknown.LabelUserNS]
		if c.SandboxID != id || !ok {
			continue
		}
		if hostID, size, err := userns.ParseLabel(v); err == nil {
			return &records.UserNSRecord{UID: rp.UID, FullName: rp.FullName(), HostID: hostID, Size: size}
		}
	}
	return nil
}

// pinnedNetNS finds <runDir>/netns/<id>/cni-* that is still a namespace.
func pinnedNetNS(cfg Config, id string) string {
	matches, _ := filepath.Glob(filepath.Join(cfg.RunDir, "netns", id, "cni-*"))
	for _, m := range matches {
		if cfg.Pinned(m) {
			return m
		}
	}
	return ""
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
