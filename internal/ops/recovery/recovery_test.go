package recovery

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/cgroups"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/wellknown"
)

type fakeRuntime []*podstate.Pod

func (f fakeRuntime) ListPods(context.Context) ([]*podstate.Pod, error) { return f, nil }

type fakeCgroups []cgroups.PodCgroup

func (f fakeCgroups) ListPods(context.Context) ([]cgroups.PodCgroup, error) { return f, nil }

type fakeStore struct {
	sandboxes map[string]records.SandboxRecord
	allocs    []records.Allocation
	boot      string
	events    map[types.UID][]records.Event
	userns    []records.UserNSRecord
}

func newStore(recs ...records.SandboxRecord) *fakeStore {
	s := &fakeStore{sandboxes: map[string]records.SandboxRecord{}, events: map[types.UID][]records.Event{}}
	for _, r := range recs {
		s.sandboxes[r.ID] = r
	}
	return s
}

func (s *fakeStore) ListSandboxes() ([]records.SandboxRecord, error) {
	var out []records.SandboxRecord
	for _, r := range s.sandboxes {
		out = append(out, r)
	}
	return out, nil
}
func (s *fakeStore) PutSandbox(r records.SandboxRecord) error { s.sandboxes[r.ID] = r; return nil }
func (s *fakeStore) PutAllocations(as []records.Allocation) error {
	s.allocs = append(s.allocs, as...)
	return nil
}
func (s *fakeStore) SetBootID(id string) error { s.boot = id; return nil }
func (s *fakeStore) PutUserNS(r records.UserNSRecord) error {
	s.userns = append(s.userns, r)
	return nil
}
func (s *fakeStore) AddEvent(uid types.UID, e records.Event) error {
	s.events[uid] = append(s.events[uid], e)
	return nil
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ctr(id, name, sandbox string, st podstate.ContainerState, created time.Time) *podstate.Container {
	return &podstate.Container{ID: id, Name: name, SandboxID: sandbox, State: st, CreatedAt: created}
}

// writeCache writes a libcni cache entry as libcni does (cniCacheV1).
func writeCache(t *testing.T, dir, net, id, ifName string, ips []string, ports any) {
	t.Helper()
	var ipList []map[string]string
	for _, ip := range ips {
		ipList = append(ipList, map[string]string{"address": ip + "/16", "gateway": "10.88.0.1"})
	}
	e := map[string]any{"kind": "cniCacheV1", "containerId": id, "ifName": ifName, "networkName": net,
		"config": []byte(`{}`), "result": map[string]any{"cniVersion": "1.0.0", "ips": ipList}}
	if ports != nil {
		e["capabilityArgs"] = map[string]any{"portMappings": ports}
	}
	raw, _ := json.Marshal(e)
	if err := os.MkdirAll(filepath.Join(dir, "results"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results", net+"-"+id+"-"+ifName), raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// pin makes <runDir>/netns/<id>/cni-x and returns it.
func pin(t *testing.T, runDir, id string) string {
	t.Helper()
	p := filepath.Join(runDir, "netns", id, "cni-x")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRebuild(t *testing.T) {
	runDir, cache := t.TempDir(), t.TempDir()
	web := &podstate.Pod{UID: "uid-web", Name: "web", Namespace: "default", Containers: []*podstate.Container{
		ctr("c-init", "init", "sb-web", podstate.StateExited, t0),
		ctr("c-app", "app", "sb-web", podstate.StateRunning, t0.Add(time.Second)),
	}}
	gone := &podstate.Pod{UID: "uid-gone", Name: "gone", Namespace: "default", Containers: []*podstate.Container{
		ctr("c-gone", "app", "sb-gone", podstate.StateRunning, t0),
	}}
	done := &podstate.Pod{UID: "uid-done", Name: "done", Namespace: "default", Containers: []*podstate.Container{
		ctr("c-done", "app", "sb-done", podstate.StateExited, t0),
	}}
	netns := pin(t, runDir, "sb-web")
	pin(t, runDir, "sb-gone") // present but no longer a namespace (Pinned says no)
	ipc := filepath.Join(runDir, "sandboxes", "sb-web", "ipc")
	writeCache(t, cache, "podhost", "sb-web", "eth0", []string{"10.88.0.7"},
		[]map[string]any{{"HostPort": 8080, "ContainerPort": 80, "Protocol": "tcp"}})
	writeCache(t, cache, "cni-loopback", "sb-web", "lo", []string{"127.0.0.1"}, nil)
	writeCache(t, cache, "podhost", "sb-gone", "eth0", []string{"10.88.0.9"}, nil)
	spec := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-web", Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
			Ports:     []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8081, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	pinned := map[string]bool{netns: true, ipc: true}
	cfg := Config{RunDir: runDir, CNICacheDir: cache, BootID: "boot-2", Why: "test",
		Pods:   func() (map[types.UID]*corev1.Pod, error) { return map[types.UID]*corev1.Pod{"uid-web": spec}, nil },
		Pinned: func(p string) bool { return pinned[p] }, Now: func() time.Time { return t0 }}
	s := newStore()
	res, err := Rebuild(context.Background(), cfg, fakeRuntime{done, gone, web},
		fakeCgroups{{UID: "uid-web", Name: "/podhost/besteffort/poduid-web"}}, s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sandboxes != 2 || res.Allocations != 1 || len(res.Pods) != 2 || s.boot != "boot-2" {
		t.Fatalf("result %+v, boot %q", res, s.boot)
	}
	got := s.sandboxes["sb-web"]
	want := records.SandboxRecord{ID: "sb-web", PodUID: "uid-web", FullName: "default/web", State: records.SandboxReady,
		NetNS: netns, IPC: ipc, Dir: filepath.Join(runDir, "sandboxes", "sb-web"), CNIResult: got.CNIResult,
		IPs:    []string{"10.88.0.7"},
		Ports:  []records.PortMapping{{HostPort: 8081, ContainerPort: 80, Protocol: "tcp"}}, // the spec wins
		Cgroup: "/podhost/besteffort/poduid-web", BootID: "boot-2", CreatedAt: t0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sb-web\n got %+v\nwant %+v", got, want)
	}
	var raw []map[string]any
	if err := json.Unmarshal(got.CNIResult, &raw); err != nil || len(raw) != 2 {
		t.Errorf("CNIResult %s: %v", got.CNIResult, err)
	}
	g := s.sandboxes["sb-gone"]
	if g.BootID != "" || g.NetNS != "" || !reflect.DeepEqual(g.IPs, []string{"10.88.0.9"}) || g.State != records.SandboxReady {
		t.Errorf("sb-gone (netns not pinned) = %+v; want no boot id (recreated), IPs kept for teardown", g)
	}
	if _, ok := s.sandboxes["sb-done"]; ok {
		t.Errorf("record made for a sandbox without running containers")
	}
	if len(s.allocs) != 1 || s.allocs[0].UID != "uid-web" || len(s.allocs[0].HostPorts) != 1 ||
		s.allocs[0].Requests.Cpu().MilliValue() != 100 {
		t.Errorf("allocations %+v", s.allocs)
	}
	for _, uid := range []types.UID{"uid-web", "uid-gone"} {
		if evs := s.events[uid]; len(evs) != 1 || evs[0].Reason != EventReason || evs[0].Type != corev1.EventTypeWarning {
			t.Errorf("events of %s: %+v", uid, evs)
		}
	}
}

// A pod with hostUsers: false gets its sandbox's pinned user namespace and
// its range back, from the containers' podhost.io/userns label.
func TestRebuildUserNS(t *testing.T) {
	runDir, cache := t.TempDir(), t.TempDir()
	app := ctr("c-app", "app", "sb-u", podstate.StateRunning, t0)
	app.Labels = map[string]string{wellknown.LabelUserNS: "196608:65536"}
	pod := &podstate.Pod{UID: "uid-u", Name: "u", Namespace: "default", Containers: []*podstate.Container{app}}
	plain := &podstate.Pod{UID: "uid-p", Name: "p", Namespace: "default", Containers: []*podstate.Container{
		ctr("c-p", "app", "sb-p", podstate.StateRunning, t0),
	}}
	netns := pin(t, runDir, "sb-u")
	user := filepath.Join(runDir, "sandboxes", "sb-u", "user")
	pinned := map[string]bool{netns: true, user: true}
	cfg := Config{RunDir: runDir, CNICacheDir: cache, BootID: "b", Pinned: func(p string) bool { return pinned[p] }}
	s := newStore()
	if _, err := Rebuild(context.Background(), cfg, fakeRuntime{pod, plain}, fakeCgroups{}, s); err != nil {
		t.Fatal(err)
	}
	want := records.UserNSRecord{UID: "uid-u", FullName: "default/u", HostID: 196608, Size: 65536}
	if got := s.sandboxes["sb-u"]; got.User != user || got.UserNS == nil || *got.UserNS != want {
		t.Errorf("sb-u user %q range %+v; want %q %+v", got.User, got.UserNS, user, want)
	}
	if len(s.userns) != 1 || s.userns[0] != want {
		t.Errorf("ranges written back %+v, want only %+v", s.userns, want)
	}
	if got := s.sandboxes["sb-p"]; got.User != "" || got.UserNS != nil {
		t.Errorf("host-users pod got %q %+v", got.User, got.UserNS)
	}
}

func TestRebuildPortsFromCNICacheWithoutSpec(t *testing.T) {
	runDir, cache := t.TempDir(), t.TempDir()
	netns := pin(t, runDir, "sb")
	writeCache(t, cache, "podhost", "sb", "eth0", []string{"fd00::5", "10.88.0.5"},
		[]map[string]any{{"HostPort": 8080, "ContainerPort": 80, "Protocol": "tcp", "HostIP": "127.0.0.1"}})
	rp := &podstate.Pod{UID: "u", Name: "p", Namespace: "ns", Containers: []*podstate.Container{ctr("c", "app", "sb", podstate.StateRunning, t0)}}
	s := newStore()
	_, err := Rebuild(context.Background(), Config{RunDir: runDir, CNICacheDir: cache, BootID: "b",
		Pinned: func(p string) bool { return p == netns }}, fakeRuntime{rp}, fakeCgroups{}, s)
	if err != nil {
		t.Fatal(err)
	}
	r := s.sandboxes["sb"]
	if !reflect.DeepEqual(r.Ports, []records.PortMapping{{HostPort: 8080, ContainerPort: 80, Protocol: "tcp", HostIP: "127.0.0.1"}}) {
		t.Errorf("ports %+v", r.Ports)
	}
	if !reflect.DeepEqual(r.IPs, []string{"10.88.0.5", "fd00::5"}) || r.BootID != "b" {
		t.Errorf("record %+v", r)
	}
	if len(s.allocs) != 0 {
		t.Errorf("allocation without a spec: %+v", s.allocs)
	}
}

func TestRebuildLeavesIntactStateAlone(t *testing.T) {
	have := records.SandboxRecord{ID: "sb", PodUID: "u", State: records.SandboxReady, BootID: "b", IPs: []string{"10.0.0.1"}}
	rp := &podstate.Pod{UID: "u", Name: "p", Namespace: "ns", Containers: []*podstate.Container{ctr("c", "app", "sb", podstate.StateRunning, t0)}}
	s := newStore(have)
	res, err := Rebuild(context.Background(), Config{RunDir: t.TempDir(), CNICacheDir: t.TempDir(), BootID: "b"},
		fakeRuntime{rp}, fakeCgroups{}, s)
	if err != nil || res.Sandboxes != 0 || len(res.Pods) != 0 || len(s.events) != 0 {
		t.Fatalf("Rebuild = %+v, %v; events %v", res, err, s.events)
	}
	if !reflect.DeepEqual(s.sandboxes["sb"], have) {
		t.Errorf("record changed: %+v", s.sandboxes["sb"])
	}
}

func TestHostNetworkPodAdoptedWithoutNetNS(t *testing.T) {
	runDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(runDir, "sandboxes", "sb"), 0o700); err != nil {
		t.Fatal(err)
	}
	spec := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: corev1.PodSpec{HostNetwork: true}}
	rp := &podstate.Pod{UID: "u", Name: "p", Namespace: "ns", Containers: []*podstate.Container{ctr("c", "app", "sb", podstate.StateRunning, t0)}}
	s := newStore()
	_, err := Rebuild(context.Background(), Config{RunDir: runDir, CNICacheDir: t.TempDir(), BootID: "b",
		Pods: func() (map[types.UID]*corev1.Pod, error) { return map[types.UID]*corev1.Pod{"u": spec}, nil }},
		fakeRuntime{rp}, fakeCgroups{}, s)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.sandboxes["sb"]; r.BootID != "b" || r.NetNS != "" || len(r.Ports) != 0 {
		t.Errorf("hostNetwork record %+v", r)
	}
}
