package eviction

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

const mi = 1 << 20

func TestParse(t *testing.T) {
	cases := []struct {
		name              string
		hard, soft, grace map[string]string
		want              []string // Threshold.String(), "soft" suffix for soft ones
		err               string
	}{
		{name: "defaults", want: []string{"imagefs.available<15%", "memory.available<100Mi", "allocatableMemory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%"}},
		{name: "given hard is not merged", hard: map[string]string{"memory.available": "1Gi"}, want: []string{"memory.available<1Gi", "allocatableMemory.available<1Gi"}},
		{name: "zero turns off", hard: map[string]string{"memory.available": "0", "nodefs.available": "0%"}, want: nil},
		{name: "soft", hard: map[string]string{}, soft: map[string]string{"nodefs.available": "20%"}, grace: map[string]string{"nodefs.available": "1m30s"}, want: []string{"nodefs.available<20% soft 1m30s"}},
		{name: "soft without grace", hard: map[string]string{}, soft: map[string]string{"memory.available": "1Gi"}, err: "grace period must be specified for the soft eviction threshold memory.available"},
		{name: "grace without soft", hard: map[string]string{}, grace: map[string]string{"memory.available": "1m"}, err: "evictionSoftGracePeriod.memory.available: no evictionSoft threshold"},
		{name: "unknown signal", hard: map[string]string{"pid.available": "10%"}, err: "evictionHard.pid.available: unsupported eviction signal"},
		{name: "allocatable is derived only", hard: map[string]string{"allocatableMemory.available": "1Gi"}, err: "unsupported eviction signal"},
		{name: "negative", hard: map[string]string{"memory.available": "-1Mi"}, err: "must not be negative"},
		{name: "bad percentage", hard: map[string]string{"nodefs.available": "120%"}, err: "between 0% and 100%"},
		{name: "bad quantity", hard: map[string]string{"nodefs.available": "lots"}, err: `evictionHard.nodefs.available: invalid quantity "lots"`},
		{name: "bad grace", hard: map[string]string{}, soft: map[string]string{"memory.available": "1Gi"}, grace: map[string]string{"memory.available": "soon"}, err: "evictionSoftGracePeriod.memory.available"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts, err := Parse(c.hard, c.soft, c.grace)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, th := range ts {
				s := th.String()
				if !th.Hard {
					s += " soft " + th.GracePeriod.String()
				}
				got = append(got, s)
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func mustParse(t *testing.T, hard, soft, grace map[string]string) []Threshold {
	t.Helper()
	ts, err := Parse(hard, soft, grace)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestObserve(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	e := &Evaluator{
		Thresholds: mustParse(t, map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"},
			map[string]string{"memory.available": "500Mi"}, map[string]string{"memory.available": "30s"}),
		PressureTransitionPeriod: time.Minute,
	}
	steps := []struct {
		at       time.Duration
		obs      Observations
		memory   bool
		disk     bool
		act      []string
		firstAct Signal
	}{
		{at: 0, obs: Observations{SignalMemoryAvailable: {Available: 1000 * mi, Capacity: 4000 * mi}, SignalNodeFsAvailable: {Available: 50, Capacity: 100}}},
		{at: 10 * time.Second, obs: Observations{SignalMemoryAvailable: {Available: 400 * mi, Capacity: 4000 * mi}}, memory: true},
		{at: 39 * time.Second, obs: Observations{SignalMemoryAvailable: {Available: 400 * mi, Capacity: 4000 * mi}}, memory: true},
		{at: 40 * time.Second, obs: Observations{SignalMemoryAvailable: {Available: 400 * mi, Capacity: 4000 * mi}}, memory: true, act: []string{"memory.available<500Mi"}},
		{at: 50 * time.Second, obs: Observations{SignalMemoryAvailable: {Available: 50 * mi, Capacity: 4000 * mi}, SignalNodeFsAvailable: {Available: 5, Capacity: 100}},
			memory: true, disk: true, act: []string{"memory.available<100Mi", "memory.available<500Mi", "nodefs.available<10%"}},
		// Recovered: the conditions stay for the transition period.
		{at: 60 * time.Second, obs: Observations{SignalMemoryAvailable: {Available: 1000 * mi, Capacity: 4000 * mi}, SignalNodeFsAvailable: {Available: 50, Capacity: 100}}, memory: true, disk: true},
		{at: 109 * time.Second, obs: Observations{}, memory: true, disk: true},
		{at: 110 * time.Second, obs: Observations{}, memory: false, disk: false},
		// The soft threshold's grace period starts again.
		{at: 120 * time.Second, obs: Observations{SignalMemoryAvailable: {Available: 400 * mi, Capacity: 4000 * mi}}, memory: true},
	}
	for _, s := range steps {
		p := e.Observe(t0.Add(s.at), s.obs)
		var act []string
		for _, th := range p.Act {
			act = append(act, th.String())
		}
		if p.Conditions[corev1.NodeMemoryPressure] != s.memory || p.Conditions[corev1.NodeDiskPressure] != s.disk ||
			strings.Join(act, ",") != strings.Join(s.act, ",") {
			t.Fatalf("at %v: memory %v disk %v act %q; want %v %v %q", s.at, p.Conditions[corev1.NodeMemoryPressure], p.Conditions[corev1.NodeDiskPressure], act, s.memory, s.disk, s.act)
		}
	}
}

type podOpt func(*corev1.Pod)

func pod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = name, "default", types.UID("uid-"+name)
	p.Spec.Containers = []corev1.Container{{Name: "c"}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withPriority(n int32) podOpt { return func(p *corev1.Pod) { p.Spec.Priority = &n } }
func withClass(c string) podOpt   { return func(p *corev1.Pod) { p.Spec.PriorityClassName = c } }
func withRequest(r corev1.ResourceName, q string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{r: resource.MustParse(q)}
	}
}
func withLimit(q string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse(q)}
	}
}
func withEmptyDir(name, size string, medium corev1.StorageMedium) podOpt {
	return func(p *corev1.Pod) {
		q := resource.MustParse(size)
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &q, Medium: medium}}})
	}
}
func withSecondContainer(limit string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "d", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse(limit)}}})
	}
}

func disk(rootfs, logs int64) map[string]ContainerUsage {
	return map[string]ContainerUsage{"c": {Rootfs: Disk{Bytes: rootfs}, Logs: Disk{Bytes: logs}}}
}

func TestDecideLocalStorage(t *testing.T) {
	cases := []struct {
		name      string
		pod       *corev1.Pod
		use       *PodUsage
		dedicated bool
		want      string
	}{
		{"container over its limit", pod("a", withLimit("10Mi")), &PodUsage{Containers: disk(8*mi, 3*mi)}, false,
			`Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. `},
		{"one of two containers over its limit", pod("a", withLimit("10Mi"), withSecondContainer("100Mi")),
			&PodUsage{Containers: map[string]ContainerUsage{"c": {Rootfs: Disk{Bytes: 11 * mi}}, "d": {}}}, false,
			`Container c exceeded its local ephemeral storage limit "10Mi". `},
		{"under the limit", pod("a", withLimit("10Mi")), &PodUsage{Containers: disk(8*mi, 1*mi)}, false, ""},
		{"dedicated image fs: the layer does not count", pod("a", withLimit("10Mi")), &PodUsage{Containers: disk(20*mi, 1*mi)}, true, ""},
		{"emptyDir over its sizeLimit", pod("a", withEmptyDir("scratch", "1Mi", "")),
			&PodUsage{Containers: disk(0, 0), Volumes: map[string]Disk{"scratch": {Bytes: 2 * mi}}}, false,
			`Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `},
		{"memory emptyDir is the tmpfs size's business", pod("a", withEmptyDir("scratch", "1Mi", corev1.StorageMediumMemory)),
			&PodUsage{Containers: disk(0, 0), Volumes: map[string]Disk{"scratch": {Bytes: 2 * mi}}}, false, ""},
		{"pod sum counts volumes", pod("a", withLimit("10Mi"), withEmptyDir("scratch", "100Mi", "")),
			&PodUsage{Containers: disk(5*mi, 0), Volumes: map[string]Disk{"scratch": {Bytes: 6 * mi}}}, false,
			`Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. `},
		{"critical pod is never evicted", pod("a", withLimit("10Mi"), withClass("system-node-critical")), &PodUsage{Containers: disk(20*mi, 0)}, false, ""},
		{"not measured", pod("a", withLimit("10Mi")), nil, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &Evaluator{}
			usage := Usage{}
			if c.use != nil {
				usage[c.pod.UID] = c.use
			}
			got := e.Decide(Pressure{}, []*corev1.Pod{c.pod}, usage, c.dedicated)
			if c.want == "" {
				if len(got) != 0 {
					t.Fatalf("evicted %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].Message != c.want || got[0].Grace != 1 || got[0].Signal != "" {
				t.Fatalf("got %+v, want one eviction with %q", got, c.want)
			}
		})
	}
}

func TestDecideMemoryPressureRanking(t *testing.T) {
	ts := mustParse(t, map[string]string{"memory.available": "100Mi"}, nil, nil)
	obs := Observations{SignalMemoryAvailable: {Available: 50 * mi, Capacity: 1000 * mi}}
	cases := []struct {
		name  string
		pods  []*corev1.Pod
		usage Usage
		want  string // evicted pod, "" none
	}{
		{"over its request before under it, whatever the priority",
			[]*corev1.Pod{pod("low", withPriority(-10), withRequest(corev1.ResourceMemory, "500Mi")), pod("high", withPriority(1000), withRequest(corev1.ResourceMemory, "10Mi"))},
			Usage{"uid-low": {Memory: 400 * mi}, "uid-high": {Memory: 20 * mi}}, "high"},
		{"lowest priority among those over their requests",
			[]*corev1.Pod{pod("big", withPriority(10)), pod("small", withPriority(1))},
			Usage{"uid-big": {Memory: 900 * mi}, "uid-small": {Memory: 10 * mi}}, "small"},
		{"largest use above the request at equal priority",
			[]*corev1.Pod{pod("a", withRequest(corev1.ResourceMemory, "300Mi")), pod("b")},
			Usage{"uid-a": {Memory: 400 * mi}, "uid-b": {Memory: 200 * mi}}, "b"},
		{"unmeasured first",
			[]*corev1.Pod{pod("a"), pod("b")},
			Usage{"uid-a": {Memory: 400 * mi}}, "b"},
		{"critical pods are skipped",
			[]*corev1.Pod{pod("node", withClass("system-node-critical")), pod("cluster", withPriority(SystemCriticalPriority)), pod("app", withPriority(100))},
			Usage{"uid-node": {Memory: 900 * mi}, "uid-cluster": {Memory: 900 * mi}, "uid-app": {Memory: 1 * mi}}, "app"},
		{"only critical pods: nothing",
			[]*corev1.Pod{pod("node", withClass("system-cluster-critical"))},
			Usage{"uid-node": {Memory: 900 * mi}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &Evaluator{Thresholds: ts}
			got := e.Decide(e.Observe(time.Now(), obs), c.pods, c.usage, false)
			if c.want == "" {
				if len(got) != 0 {
					t.Fatalf("evicted %s", got[0].Pod.Name)
				}
				return
			}
			if len(got) != 1 || got[0].Pod.Name != c.want {
				t.Fatalf("got %+v, want %s", got, c.want)
			}
			if got[0].Signal != SignalMemoryAvailable || got[0].Grace != 1 {
				t.Fatalf("signal %s grace %d", got[0].Signal, got[0].Grace)
			}
		})
	}
}

func TestPressureMessage(t *testing.T) {
	ts := mustParse(t, map[string]string{"memory.available": "100Mi"}, nil, nil)
	e := &Evaluator{Thresholds: ts}
	p := pod("hog", withRequest(corev1.ResourceMemory, "64Mi"))
	got := e.Decide(e.Observe(time.Now(), Observations{SignalMemoryAvailable: {Available: 50 * mi, Capacity: 1000 * mi}}),
		[]*corev1.Pod{p}, Usage{p.UID: {Memory: 300 * mi, Containers: map[string]ContainerUsage{"c": {Memory: 300 * mi}}}}, false)
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 300Mi, request is 64Mi, has larger consumption of memory. "
	if len(got) != 1 || got[0].Message != want {
		t.Fatalf("got %+v\nwant %q", got, want)
	}
}

func TestDecideDiskPressureSoftGrace(t *testing.T) {
	ts := mustParse(t, map[string]string{}, map[string]string{"nodefs.available": "20%"}, map[string]string{"nodefs.available": "1m"})
	e := &Evaluator{Thresholds: ts, MaxPodGracePeriod: 20}
	t0 := time.Unix(1_700_000_000, 0)
	obs := Observations{SignalNodeFsAvailable: {Available: 10, Capacity: 100}}
	long := int64(60)
	a, b := pod("a"), pod("b")
	a.Spec.TerminationGracePeriodSeconds = &long
	usage := Usage{a.UID: {Containers: disk(5*mi, 1*mi)}, b.UID: {Containers: disk(1*mi, 0), Volumes: map[string]Disk{"v": {Bytes: 1 * mi}}}}
	if got := e.Decide(e.Observe(t0, obs), []*corev1.Pod{a, b}, usage, false); len(got) != 0 {
		t.Fatalf("evicted before the grace period: %+v", got)
	}
	got := e.Decide(e.Observe(t0.Add(time.Minute), obs), []*corev1.Pod{a, b}, usage, false)
	if len(got) != 1 || got[0].Pod.Name != "a" || got[0].Grace != 20 {
		t.Fatalf("got %+v, want a with grace 20", got)
	}
	if !strings.HasPrefix(got[0].Message, "The node was low on resource: ephemeral-storage. Threshold quantity: 20, available: 10. Container c was using 6Mi, request is 0, has larger consumption of ephemeral-storage. ") {
		t.Fatalf("message %q", got[0].Message)
	}
}

func TestNeedsDiskUsage(t *testing.T) {
	for _, c := range []struct {
		pod  *corev1.Pod
		want bool
	}{
		{pod("a"), false},
		{pod("a", withLimit("1Gi")), true},
		{pod("a", withEmptyDir("v", "1Gi", "")), true},
		{pod("a", withEmptyDir("v", "1Gi", corev1.StorageMediumMemory)), false},
	} {
		if got := NeedsDiskUsage(c.pod); got != c.want {
			t.Errorf("%+v: %v", c.pod.Spec, got)
		}
	}
}

func TestReservation(t *testing.T) {
	capacity := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	for _, c := range []struct {
		hard, soft map[string]string
		mem, fs    string
	}{
		{nil, nil, "100Mi", "10Gi"},
		{map[string]string{"memory.available": "10%", "nodefs.available": "1Gi"}, nil, "429496729", "1Gi"},
		{map[string]string{}, map[string]string{"memory.available": "1Gi"}, "", ""},
	} {
		grace := map[string]string{}
		for k := range c.soft {
			grace[k] = "1m"
		}
		r := Reservation(mustParse(t, c.hard, c.soft, grace), capacity)
		mem, fs := r[corev1.ResourceMemory], r[corev1.ResourceEphemeralStorage]
		if want := c.mem; (want == "" && !mem.IsZero()) || (want != "" && mem.Cmp(resource.MustParse(want)) != 0) {
			t.Errorf("%v: memory %s, want %s", c.hard, mem.String(), want)
		}
		if want := c.fs; (want == "" && !fs.IsZero()) || (want != "" && fs.Cmp(resource.MustParse(want)) != 0) {
			t.Errorf("%v: ephemeral-storage %s, want %s", c.hard, fs.String(), want)
		}
	}
}

func TestAdmit(t *testing.T) {
	mem, disk := corev1.NodeMemoryPressure, corev1.NodeDiskPressure
	burstable := withRequest(corev1.ResourceMemory, "1Mi")
	tolerates := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	for _, c := range []struct {
		name  string
		conds []corev1.NodeConditionType
		pod   *corev1.Pod
		want  string // "" admitted
	}{
		{"no pressure", nil, pod("a"), ""},
		{"memory: best effort refused", []corev1.NodeConditionType{mem}, pod("a"), "The node had condition: [MemoryPressure]. "},
		{"memory: burstable admitted", []corev1.NodeConditionType{mem}, pod("a", burstable), ""},
		{"memory: best effort tolerating the taint", []corev1.NodeConditionType{mem}, pod("a", tolerates), ""},
		{"disk: all refused", []corev1.NodeConditionType{disk}, pod("a", burstable), "The node had condition: [DiskPressure]. "},
		{"both", []corev1.NodeConditionType{mem, disk}, pod("a", burstable), "The node had condition: [MemoryPressure DiskPressure]. "},
		{"critical admitted", []corev1.NodeConditionType{mem, disk}, pod("a", withClass("system-cluster-critical")), ""},
	} {
		r := Admit(c.conds, c.pod)
		if (c.want == "") != r.Admit || (c.want != "" && (r.Message != c.want || r.Reason != "Evicted")) {
			t.Errorf("%s: %+v, want %q", c.name, r, c.want)
		}
	}
}
