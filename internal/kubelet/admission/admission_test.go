package admission

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

const meminfo = `MemTotal:        8000000 kB
MemFree:         1000000 kB
MemAvailable:    4000000 kB
`

func fakeHost() Host {
	return Host{
		NumCPU:  func() int { return 4 },
		MemInfo: func() ([]byte, error) { return []byte(meminfo), nil },
	}
}

func TestCapacityAndAllocatable(t *testing.T) {
	capacity, err := fakeHost().Capacity()
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, list corev1.ResourceList, name corev1.ResourceName, want string) {
		t.Helper()
		if q := list[name]; q.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("%s %s = %s, want %s", what, name, q.String(), want)
		}
	}
	check("capacity", capacity, corev1.ResourceCPU, "4")
	check("capacity", capacity, corev1.ResourceMemory, "8192000000")
	check("capacity", capacity, corev1.ResourcePods, "110")

	alloc, err := fakeHost().Allocatable(corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("500m"),
		corev1.ResourceMemory: resource.MustParse("9Gi"), // more than there is
	})
	if err != nil {
		t.Fatal(err)
	}
	check("allocatable", alloc, corev1.ResourceCPU, "3500m")
	check("allocatable", alloc, corev1.ResourceMemory, "0")
	check("allocatable", alloc, corev1.ResourcePods, "110")
}

func TestCapacityErrors(t *testing.T) {
	for name, h := range map[string]Host{
		"read error":  {MemInfo: func() ([]byte, error) { return nil, errors.New("boom") }},
		"no memtotal": {MemInfo: func() ([]byte, error) { return []byte("MemFree: 1 kB\n"), nil }},
		"bad number":  {MemInfo: func() ([]byte, error) { return []byte("MemTotal: x kB\n"), nil }},
	} {
		if _, err := h.Capacity(); err == nil {
			t.Errorf("%s: want error", name)
		}
	}
}

func TestNodeAllocatableReadsMachine(t *testing.T) {
	alloc, err := NodeAllocatable(nil, 0)
	if err != nil {
		t.Skipf("no /proc/meminfo: %v", err)
	}
	if alloc.Cpu().IsZero() || alloc.Memory().IsZero() || alloc.Pods().Value() != DefaultMaxPods {
		t.Errorf("allocatable = %v", alloc)
	}
}

func TestNodeAllocatableMaxPods(t *testing.T) {
	alloc, err := NodeAllocatable(nil, 3)
	if err != nil {
		t.Skipf("no /proc/meminfo: %v", err)
	}
	if got := alloc.Pods().Value(); got != 3 {
		t.Fatalf("allocatable pods = %d, want 3", got)
	}
	admitted := []*corev1.Pod{}
	var rejected []Result
	for range 5 {
		p := pod("", "")
		if r := Admit(p, alloc, admitted); r.Admit {
			admitted = append(admitted, p)
		} else {
			rejected = append(rejected, r)
		}
	}
	if len(admitted) != 3 || len(rejected) != 2 || rejected[0].Reason != "OutOfpods" {
		t.Fatalf("admitted %d, rejected %+v; want 3 admitted and 2 OutOfpods", len(admitted), rejected)
	}
}

var podN int

func pod(cpu, mem string, ports ...corev1.ContainerPort) *corev1.Pod {
	podN++
	req := corev1.ResourceList{}
	if cpu != "" {
		req[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Ports: ports, Resources: corev1.ResourceRequirements{Requests: req},
	}}}}
	p.Name = fmt.Sprintf("p%d", podN)
	p.UID = types.UID(p.Name)
	return p
}

func port(hostIP string, proto corev1.Protocol, hostPort int32) corev1.ContainerPort {
	return corev1.ContainerPort{ContainerPort: 80, HostPort: hostPort, HostIP: hostIP, Protocol: proto}
}

// Only app containers and native sidecars hold host ports (the
// scheduler's GetHostPorts): a run-to-completion init container does not.
func TestAdmitHostPortsInitContainers(t *testing.T) {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	always := corev1.ContainerRestartPolicyAlways
	withInit := func(sidecar bool) *corev1.Pod {
		p := pod("", "")
		p.Name, p.UID = "init", "init"
		p.Spec.InitContainers = []corev1.Container{{Name: "i", Ports: []corev1.ContainerPort{port("", "", 8080)}}}
		if sidecar {
			p.Spec.InitContainers[0].RestartPolicy = &always
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		sidecar bool
		admit   bool
	}{{"init container", false, true}, {"native sidecar", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			newPod := pod("", "", port("", "", 8080))
			if got := Admit(newPod, alloc, []*corev1.Pod{withInit(tc.sidecar)}); got.Admit != tc.admit {
				t.Errorf("admitted pod holding it: Admit = %+v, want admit %v", got, tc.admit)
			}
			if got := Admit(withInit(tc.sidecar), alloc, []*corev1.Pod{newPod}); got.Admit != tc.admit {
				t.Errorf("new pod wanting it: Admit = %+v, want admit %v", got, tc.admit)
			}
		})
	}
}

func TestAdmitResources(t *testing.T) {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("1Gi"),
		corev1.ResourcePods:   resource.MustParse("3"),
	}
	withInit := pod("100m", "")
	withInit.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}}}
	gpu := pod("", "")
	gpu.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
	tests := []struct {
		name     string
		pod      *corev1.Pod
		admitted []*corev1.Pod
		want     Result
	}{
		{"fits", pod("500m", "256Mi"), []*corev1.Pod{pod("1", "512Mi")}, Result{Admit: true}},
		{"best effort fits", pod("", ""), []*corev1.Pod{pod("2", "1Gi")}, Result{Admit: true}},
		{"out of cpu", pod("500m", ""), []*corev1.Pod{pod("1", ""), pod("800m", "")}, Result{
			Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000"}},
		{"out of memory", pod("", "512Mi"), []*corev1.Pod{pod("", "768Mi")}, Result{
			Reason: "OutOfmemory", Message: "Node didn't have enough resource: memory, requested: 536870912, used: 805306368, capacity: 1073741824"}},
		{"out of pods", pod("", ""), []*corev1.Pod{pod("", ""), pod("", ""), pod("", "")}, Result{
			Reason: "OutOfpods", Message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"}},
		{"init container counts", withInit, []*corev1.Pod{pod("1", "")}, Result{
			Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"}},
		{"unknown extended resource", gpu, nil, Result{
			Reason: "OutOfexample.com/gpu", Message: "Node didn't have enough resource: example.com/gpu, requested: 1, used: 0, capacity: 0"}},
	}
	finished := func(p *corev1.Pod, phase corev1.PodPhase) *corev1.Pod { p.Status.Phase = phase; return p }
	tests = append(tests, []struct {
		name     string
		pod      *corev1.Pod
		admitted []*corev1.Pod
		want     Result
	}{
		{"succeeded pod holds no cpu", pod("1500m", ""), []*corev1.Pod{finished(pod("1", ""), corev1.PodSucceeded)}, Result{Admit: true}},
		{"failed pod holds no memory", pod("", "768Mi"), []*corev1.Pod{finished(pod("", "768Mi"), corev1.PodFailed)}, Result{Admit: true}},
		{"finished pods do not count as pods", pod("", ""), []*corev1.Pod{pod("", ""), pod("", ""), finished(pod("", ""), corev1.PodSucceeded)}, Result{Admit: true}},
		{"running pod still counts", pod("1500m", ""), []*corev1.Pod{finished(pod("1", ""), corev1.PodRunning)}, Result{
			Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"}},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Admit(tt.pod, alloc, tt.admitted); got != tt.want {
				t.Errorf("Admit = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAdmitIgnoresItself(t *testing.T) {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("1")}
	p := pod("1", "", port("", "", 8080))
	if got := Admit(p, alloc, []*corev1.Pod{p}); !got.Admit {
		t.Errorf("re-admitting the same pod: %+v", got)
	}
}

func TestAdmitHostPorts(t *testing.T) {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	conflict := Result{Reason: "NodePorts", Message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"}
	ok := Result{Admit: true}
	hostNet := pod("", "", corev1.ContainerPort{ContainerPort: 9090})
	hostNet.Spec.HostNetwork = true
	tests := []struct {
		name       string
		want, have corev1.ContainerPort
		wantPod    *corev1.Pod
		result     Result
	}{
		{"same port", port("", "", 8080), port("", "", 8080), nil, conflict},
		{"tcp default equals TCP", port("", "", 8080), port("", corev1.ProtocolTCP, 8080), nil, conflict},
		{"different protocol", port("", corev1.ProtocolUDP, 8080), port("", "", 8080), nil, ok},
		{"different port", port("", "", 8081), port("", "", 8080), nil, ok},
		{"wildcard vs specific", port("", "", 8080), port("10.0.0.1", "", 8080), nil, conflict},
		{"specific vs wildcard", port("10.0.0.1", "", 8080), port("0.0.0.0", "", 8080), nil, conflict},
		{"two specific addresses", port("10.0.0.1", "", 8080), port("10.0.0.2", "", 8080), nil, ok},
		{"same specific address", port("10.0.0.1", "", 8080), port("10.0.0.1", "", 8080), nil, conflict},
		{"no host port", port("", "", 0), port("", "", 8080), nil, ok},
		{"hostNetwork uses container port", port("", "", 0), port("", "", 9090), hostNet, conflict},
		{":: is an address, not a wildcard", port("::", "", 8080), port("10.0.0.1", "", 8080), nil, ok},
		{":: vs ::", port("::", "", 8080), port("::", "", 8080), nil, conflict},
		{"0.0.0.0 vs ::", port("", "", 8080), port("::", "", 8080), nil, conflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.wantPod
			if p == nil {
				p = pod("", "", tt.want)
			}
			if got := Admit(p, alloc, []*corev1.Pod{pod("", "", tt.have)}); got != tt.result {
				t.Errorf("Admit = %+v, want %+v", got, tt.result)
			}
			if tt.result == conflict { // a finished pod no longer holds its host port
				done := pod("", "", tt.have)
				done.Status.Phase = corev1.PodSucceeded
				if got := Admit(p, alloc, []*corev1.Pod{done}); !got.Admit {
					t.Errorf("host port of a finished pod: %+v, want admitted", got)
				}
			}
		})
	}
}
