package syncer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podhost/podhost/internal/host/cgroups"
	"github.com/podhost/podhost/internal/host/network"
	"github.com/podhost/podhost/internal/host/sandbox"
	"github.com/podhost/podhost/internal/host/spec"
	"github.com/podhost/podhost/internal/kubelet/lifecycle"
	"github.com/podhost/podhost/internal/kubelet/prober"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/runtimeapi"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// fakeRuntime keeps containers in memory and logs every call.
type fakeRuntime struct {
	mu      sync.Mutex
	pods    map[types.UID]*podstate.Pod
	calls   []string
	stops   map[string]int
	graces  map[string]time.Duration
	pullErr error
	// imageErr: EnsureImage's error for one image ref (the image policy's
	// refusal, say).
	imageErr map[string]error
	// userNS: the rootfs mapping each container was created with.
	userNS map[string][]specs.LinuxIDMapping
	// pullSize, if set, makes EnsureImage fetch the image (the pull hook
	// runs, Pulled is set) instead of finding it present.
	pullSize int64
	// pullGate, if set: a started pull (pullSize) sends on it, then waits
	// to receive from it before it ends.
	pullGate chan struct{}
	// stopGate, if set, is waited on by StopContainer (a grace period).
	stopGate chan struct{}
	// stopExit, if set, is the exit code of a stopped container (else 137:
	// killed; 0: an app that traps SIGTERM and exits cleanly).
	stopExit *int32
	// onStop runs at the first StopContainer; onStart once every container
	// of a pod runs (tests' signals).
	onStop, onStart func()
	lists           int
	byID            int      // PodContainers calls
	stopOrder       []string // container names, in the order their stops began
	removeErr       error    // RemoveContainer's error, if set
	// clock stamps StartedAt/FinishedAt; newWorld points it at the world's clock.
	clock func() time.Time
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{pods: map[types.UID]*podstate.Pod{}, stops: map[string]int{}, graces: map[string]time.Duration{}, clock: time.Now}
}

func (r *fakeRuntime) log(format string, a ...any) {
	r.calls = append(r.calls, fmt.Sprintf(format, a...))
}

func (r *fakeRuntime) EnsureImage(ctx context.Context, ref string, _ corev1.PullPolicy) (runtimeapi.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log("pull %s", ref)
	if r.pullErr != nil {
		return runtimeapi.Image{}, fmt.Errorf("%w: %w", runtimeapi.ErrImagePull, r.pullErr)
	}
	if err := r.imageErr[ref]; err != nil {
		return runtimeapi.Image{}, err
	}
	if r.pullSize > 0 {
		runtimeapi.PullStarted(ctx)
		if g := r.pullGate; g != nil {
			r.mu.Unlock()
			g <- struct{}{}
			<-g
			r.mu.Lock()
		}
		return runtimeapi.Image{Ref: ref, Size: r.pullSize, Pulled: true}, nil
	}
	return runtimeapi.Image{Ref: ref}, nil
}

func (r *fakeRuntime) CreateContainer(_ context.Context, cfg runtimeapi.ContainerConfig) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := cfg.Labels
	uid := types.UID(l[wellknown.LabelPodUID])
	p := r.pods[uid]
	if p == nil {
		p = &podstate.Pod{UID: uid, Name: l[wellknown.LabelPodName], Namespace: l[wellknown.LabelPodNamespace]}
		r.pods[uid] = p
	}
	var restarts, attempt int
	_, _ = fmt.Sscan(l[wellknown.LabelRestartCount], &restarts)
	_, _ = fmt.Sscan(l[wellknown.LabelAttempt], &attempt)
	p.Containers = append(p.Containers, &podstate.Container{
		ID: cfg.ID, Name: l[wellknown.LabelContainerName], Init: l[wellknown.LabelInit] == "true",
		Hash: l[wellknown.LabelSpecHash], SandboxID: l[wellknown.LabelSandboxID], RestartCount: restarts, Attempt: attempt,
		State: podstate.StateCreated, CreatedAt: time.Now(), Labels: l,
	})
	r.log("create %s", l[wellknown.LabelContainerName])
	if r.userNS == nil {
		r.userNS = map[string][]specs.LinuxIDMapping{}
	}
	r.userNS[cfg.ID] = cfg.UserNS
	return nil
}

func (r *fakeRuntime) find(id string) *podstate.Container {
	for _, p := range r.pods {
		for _, c := range p.Containers {
			if c.ID == id {
				return c
			}
		}
	}
	return nil
}

func (r *fakeRuntime) StartContainer(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.find(id)
	if c == nil {
		return errors.New("no such container")
	}
	c.State, c.StartedAt = podstate.StateRunning, r.clock()
	r.log("start %s", c.Name)
	if r.onStart != nil && len(r.pods[types.UID(c.Labels[wellknown.LabelPodUID])].Running()) > 1 {
		r.onStart()
		r.onStart = nil
	}
	return nil
}

// exit makes a running container exit by itself.
func (r *fakeRuntime) exit(id string, code int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.find(id); c != nil && c.State == podstate.StateRunning {
		c.State, c.ExitCode, c.FinishedAt = podstate.StateExited, code, r.clock()
	}
}

func (r *fakeRuntime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	r.mu.Lock()
	r.stops[id]++
	r.graces[id] = grace
	if c := r.find(id); c != nil {
		r.stopOrder = append(r.stopOrder, c.Name)
	}
	gate, code := r.stopGate, int32(137)
	if r.stopExit != nil {
		code = *r.stopExit
	}
	if r.onStop != nil {
		r.onStop()
		r.onStop = nil
	}
	r.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.exit(id, code)
	return nil
}

func (r *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removeErr != nil {
		return r.removeErr
	}
	for _, p := range r.pods {
		for i, c := range p.Containers {
			if c.ID == id {
				p.Containers = append(p.Containers[:i], p.Containers[i+1:]...)
				r.log("remove %s", c.Name)
				return nil
			}
		}
	}
	return nil
}

// ListPod returns a copy: what a list saw, not a live view.
func (r *fakeRuntime) ListPod(_ context.Context, uid types.UID) (*podstate.Pod, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists++
	out := &podstate.Pod{UID: uid}
	if p := r.pods[uid]; p != nil {
		out.Name, out.Namespace = p.Name, p.Namespace
		for _, c := range p.Containers {
			cp := *c
			out.Containers = append(out.Containers, &cp)
		}
	}
	return out, nil
}

func (r *fakeRuntime) Refresh(ctx context.Context, uid types.UID) (*podstate.Pod, error) {
	return r.ListPod(ctx, uid)
}

// Track: the fake's Refresh lists the pod anyway.
func (r *fakeRuntime) Track(types.UID, string) {}

// ListPods lists every pod (copies, as ListPod).
func (r *fakeRuntime) ListPods(ctx context.Context) ([]*podstate.Pod, error) {
	r.mu.Lock()
	uids := make([]types.UID, 0, len(r.pods))
	for uid := range r.pods {
		uids = append(uids, uid)
	}
	r.mu.Unlock()
	out := make([]*podstate.Pod, 0, len(uids))
	for _, uid := range uids {
		p, _ := r.ListPod(ctx, uid)
		out = append(out, p)
	}
	return out, nil
}

// PodContainers returns the containers ids of uid only: a container the
// caller did not name is not seen.
func (r *fakeRuntime) PodContainers(_ context.Context, uid types.UID, ids []string) (*podstate.Pod, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byID++
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	out := &podstate.Pod{UID: uid}
	if p := r.pods[uid]; p != nil {
		out.Name, out.Namespace = p.Name, p.Namespace
		for _, c := range p.Containers {
			if want[c.ID] {
				cp := *c
				out.Containers = append(out.Containers, &cp)
			}
		}
	}
	return out, nil
}

func (r *fakeRuntime) graceOf(id string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.graces[id]
}

func (r *fakeRuntime) stopCount(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stops[id]
}

// fakeHost fakes sandboxes, network, cgroups, volumes and the store, with
// a failure to inject per step.
type fakeHost struct {
	mu        sync.Mutex
	fail      map[string]error // step name -> error
	sandboxes map[string]records.SandboxRecord
	removed   []string // sandbox dirs removed
	teardowns []string // sandbox ids torn down on the network
	cgroups   map[types.UID]bool
	puts      int
	refreshed []*corev1.Pod // pods whose data volumes Refresh rewrote
	// madeSources lists the paths MakeMountSource was asked to create.
	madeSources []string
	memUsage    uint64 // every cgroup's memory usage (resize tests)
	// hostsWrites lists each WriteHosts: "<sandbox dir> <ips>".
	hostsWrites []string
	// hostsFailFrom > 0 fails that WriteHosts and every later one.
	hostsFailFrom int
	// sandboxLists / podSandboxLists count ListSandboxes / PodSandboxes.
	sandboxLists, podSandboxLists int
	logRemovals                   map[types.UID]bool // the store's records (podlogs_test.go)
}

func newFakeHost() *fakeHost {
	return &fakeHost{fail: map[string]error{}, sandboxes: map[string]records.SandboxRecord{}, cgroups: map[types.UID]bool{}}
}

func (h *fakeHost) err(step string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fail[step]
}

func (h *fakeHost) Dir(id string) string { return "/fake/sandboxes/" + id }
func (h *fakeHost) Create(_ context.Context, id string, pod *corev1.Pod, uns *records.UserNSRecord) (sandbox.Paths, error) {
	if pod.Spec.HostNetwork { // as sandbox.Manager: no netns of its own
		return sandbox.Paths{Dir: h.Dir(id)}, h.err("sandbox")
	}
	// Any existing path passes currentSandbox's check that the pin is there.
	p := sandbox.Paths{Dir: h.Dir(id), NetNS: "/proc/self/ns/net"}
	if uns != nil {
		p.User = h.Dir(id) + "/user"
	}
	return p, h.err("sandbox")
}
func (h *fakeHost) IDMapped(p sandbox.Paths, src string) (string, error) {
	return p.Dir + "/idmap" + src, nil
}
func (h *fakeHost) WriteHosts(p sandbox.Paths, _ *corev1.Pod, ips []string) error {
	h.mu.Lock()
	h.hostsWrites = append(h.hostsWrites, p.Dir+" "+strings.Join(ips, ","))
	n := len(h.hostsWrites)
	h.mu.Unlock()
	if h.hostsFailFrom > 0 && n >= h.hostsFailFrom {
		return errors.New("hosts: disk full")
	}
	return h.err("hosts")
}
func (h *fakeHost) Remove(_ context.Context, p sandbox.Paths) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removed = append(h.removed, p.Dir)
	return nil
}

func (h *fakeHost) Setup(context.Context, string, string, []network.PortMapping) (*network.Result, error) {
	if err := h.err("network"); err != nil {
		return nil, err
	}
	return &network.Result{IPs: []string{"10.89.0.2"}}, nil
}
func (h *fakeHost) Teardown(_ context.Context, id, _ string, _ []network.PortMapping) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.teardowns = append(h.teardowns, id)
	return nil
}

func (h *fakeHost) Driver() string { return cgroups.DriverCgroupfs }
func (h *fakeHost) EnsurePod(_ context.Context, uid types.UID, q corev1.PodQOSClass, _ cgroups.Resources) (cgroups.PodCgroup, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cgroups[uid] = true
	return cgroups.PodCgroup{Name: "/podhost/pod" + string(uid), UID: uid, QOS: q}, nil
}
func (h *fakeHost) ContainerPath(pc cgroups.PodCgroup, id string) string { return pc.Name + "/" + id }
func (h *fakeHost) RemovePod(_ context.Context, pc cgroups.PodCgroup) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.cgroups, pc.UID)
	return nil
}
func (h *fakeHost) ListPods(context.Context) ([]cgroups.PodCgroup, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []cgroups.PodCgroup
	for uid := range h.cgroups {
		out = append(out, cgroups.PodCgroup{Name: "/podhost/pod" + string(uid), UID: uid})
	}
	return out, nil
}

func (h *fakeHost) Prepare(context.Context, *corev1.Pod) (map[string]string, []error, error) {
	var warnings []error
	if w := h.err("volume-warning"); w != nil {
		warnings = []error{w}
	}
	return map[string]string{}, warnings, h.err("volumes")
}
func (h *fakeHost) Cleanup(context.Context, types.UID) error { return nil }
func (h *fakeHost) Refresh(_ context.Context, pod *corev1.Pod) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refreshed = append(h.refreshed, pod)
	return nil
}
func (h *fakeHost) PrepareSubPath(uid types.UID, sp spec.SubPathMount) (string, error) {
	if err := h.err("subpath"); err != nil {
		return "", err
	}
	return fmt.Sprintf("/fake/pods/%s/volume-subpaths/%s/%s/%d", uid, sp.Volume, sp.Container, sp.Index), nil
}
func (h *fakeHost) MakeMountSource(path string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.madeSources = append(h.madeSources, path)
	return h.fail["mount-source"]
}
func (h *fakeHost) TerminationLog(uid types.UID, container, id string) (string, error) {
	if err := h.err("termlog"); err != nil {
		return "", err
	}
	return "/fake/pods/" + string(uid) + "/containers/" + container + "/" + id, nil
}

func (h *fakeHost) PutSandbox(r records.SandboxRecord) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.puts++
	if err := h.fail[fmt.Sprintf("put%d", h.puts)]; err != nil {
		return err
	}
	h.sandboxes[r.ID] = r
	return nil
}
func (h *fakeHost) DeleteSandbox(id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.sandboxes, id)
	return nil
}
func (h *fakeHost) ListSandboxes() ([]records.SandboxRecord, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sandboxLists++
	var out []records.SandboxRecord
	for _, r := range h.sandboxes {
		out = append(out, r)
	}
	return out, nil
}
func (h *fakeHost) PodSandboxes(uid types.UID) ([]records.SandboxRecord, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.podSandboxLists++
	var out []records.SandboxRecord
	for _, r := range h.sandboxes {
		if r.PodUID == uid {
			out = append(out, r)
		}
	}
	return out, nil
}

// fakeVolumes adds ListPods (the cgroups fake has one of its own).
type fakeVolumes struct{ *fakeHost }

func (fakeVolumes) ListPods() ([]types.UID, error) { return nil, nil }

// fakeObserver records statuses and events.
type fakeObserver struct {
	mu       sync.Mutex
	desired  bool
	notReady bool // SourcesReady false: no manifest snapshot applied yet
	events   []string
	statuses []corev1.PodStatus
	keepLast bool // LastStatus returns the last status set (as the status manager)
}

func (o *fakeObserver) SetStatus(_ *corev1.Pod, st corev1.PodStatus) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.statuses = append(o.statuses, st)
}
func (o *fakeObserver) LastStatus(types.UID) *corev1.PodStatus {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.keepLast || len(o.statuses) == 0 {
		return nil
	}
	st := o.statuses[len(o.statuses)-1].DeepCopy()
	return st
}
func (o *fakeObserver) Event(_ types.UID, typ, reason, msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, typ+" "+reason+" "+msg)
}
func (o *fakeObserver) IsDesired(types.UID) bool { o.mu.Lock(); defer o.mu.Unlock(); return o.desired }
func (o *fakeObserver) SourcesReady() bool       { o.mu.Lock(); defer o.mu.Unlock(); return !o.notReady }
func (o *fakeObserver) eventList() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.events...)
}
func (o *fakeObserver) last() corev1.PodStatus {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.statuses[len(o.statuses)-1]
}

// fakeProber reports the unhealthy containers it is told.
type fakeProber struct {
	mu        sync.Mutex
	unhealthy map[string]prober.Unhealthy
	started   map[string]bool // startup probe results
}

func (p *fakeProber) Sync(*corev1.Pod, *podstate.Pod, string) {}
func (p *fakeProber) Results(types.UID) prober.PodResults {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := map[string]prober.Unhealthy{}
	for k, v := range p.unhealthy {
		u[k] = v
	}
	st := map[string]bool{}
	for k, v := range p.started {
		st[k] = v
	}
	return prober.PodResults{Unhealthy: u, Started: st}
}

func (p *fakeProber) setStarted(name string, started bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started == nil {
		p.started = map[string]bool{}
	}
	p.started[name] = started
}
func (p *fakeProber) StopLivenessAndStartup(types.UID) {}
func (p *fakeProber) Forget(types.UID)                 {}
func (p *fakeProber) set(name string, u prober.Unhealthy) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.unhealthy == nil {
		p.unhealthy = map[string]prober.Unhealthy{}
	}
	p.unhealthy[name] = u
}

// fakeHooks records each hook run as "<first word of its exec command>
// <container> stops=<StopContainer calls of the container so far>" and
// fails those whose command's first word is in fail. While block is set, a
// run waits for it (or for its ctx: cut off).
type fakeHooks struct {
	rt    *fakeRuntime
	mu    sync.Mutex
	runs  []string
	fail  map[string]bool
	block chan struct{}
	// started gets each run's record as it starts (if set).
	started chan string
	cutOff  int
}

func (h *fakeHooks) Run(ctx context.Context, t lifecycle.Target, hd *corev1.LifecycleHandler) (string, error) {
	word := hd.Exec.Command[0]
	rec := fmt.Sprintf("%s %s stops=%d", word, t.Container.Name, h.rt.stopCount(t.ContainerID))
	h.mu.Lock()
	h.runs = append(h.runs, rec)
	block, fail, started := h.block, h.fail[word], h.started
	h.mu.Unlock()
	if started != nil {
		started <- rec
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			h.mu.Lock()
			h.cutOff++
			h.mu.Unlock()
			return "cut off", ctx.Err()
		}
	}
	if fail {
		return word + " failed", errors.New("exit 1")
	}
	return "", nil
}

func (h *fakeHooks) cutOffs() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cutOff
}

func (h *fakeHooks) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.runs...)
}

type world struct {
	s     *Syncer
	rt    *fakeRuntime
	host  *fakeHost
	obs   *fakeObserver
	prb   *fakeProber
	hooks *fakeHooks
	logs  *fakePodLogs
	clk   *clocktesting.FakeClock
	now   time.Time
}

func newWorld() *world {
	w := &world{rt: newFakeRuntime(), host: newFakeHost(), obs: &fakeObserver{desired: true}, prb: &fakeProber{}, logs: &fakePodLogs{}, now: time.Now()}
	w.hooks = &fakeHooks{rt: w.rt, fail: map[string]bool{}}
	w.clk = clocktesting.NewFakeClock(w.now)
	w.s = New(Config{BootID: "boot1", HostIP: "192.0.2.1"}, Deps{
		Runtime: w.rt, Cache: w.rt, Sandboxes: w.host, Network: w.host, Cgroups: w.host,
		Volumes: fakeVolumes{w.host}, Store: w.host, Observer: w.obs, Prober: w.prb, Hooks: w.hooks, Clock: w.clk, PodLogs: w.logs,
		Now: func() time.Time { return w.now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	w.rt.clock = func() time.Time { return w.now }
	return w
}

func worldPod(policy corev1.RestartPolicy, containers ...string) *corev1.Pod {
	grace := int64(5)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1",
		Annotations: map[string]string{wellknown.AnnotationConfigHash: "h1", wellknown.AnnotationIdentityHash: "id1"}},
		Spec: corev1.PodSpec{RestartPolicy: policy, TerminationGracePeriodSeconds: &grace}}
	for _, n := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "busybox:1",
			Command: []string{"sleep", "1000"}, ImagePullPolicy: corev1.PullIfNotPresent})
	}
	return p
}

func (r *fakeRuntime) UpdateContainerResources(_ context.Context, id string, _ *specs.LinuxResources, labels map[string]string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.find(id)
	if c == nil || c.State != podstate.StateRunning {
		return errors.New("no running task")
	}
	for k, v := range labels {
		c.Labels[k] = v
	}
	r.log("resize %s", c.Name)
	return nil
}

func (h *fakeHost) PodStats(types.UID, corev1.PodQOSClass) (cgroups.Stats, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return cgroups.Stats{MemoryUsage: h.memUsage}, nil
}

func (h *fakeHost) ContainerStats(types.UID, corev1.PodQOSClass, string) (cgroups.Stats, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return cgroups.Stats{MemoryUsage: h.memUsage}, nil
}
