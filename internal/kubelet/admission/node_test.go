package admission

import (
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestNodeLabels(t *testing.T) {
	got := NodeLabels("edge-1", map[string]string{"zone": "a", corev1.LabelHostname: "gw"})
	want := map[string]string{corev1.LabelHostname: "gw", corev1.LabelOSStable: runtime.GOOS, corev1.LabelArchStable: runtime.GOARCH,
		"beta.kubernetes.io/os": runtime.GOOS, "beta.kubernetes.io/arch": runtime.GOARCH, "zone": "a"}
	if len(got) != len(want) {
		t.Fatalf("labels %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if n := NodeName(" Edge-1\n"); n != "edge-1" {
		t.Errorf("NodeName = %q", n)
	}
}

// The kubelet's predicate admission of node labels (pkg/kubelet/lifecycle/
// predicate.go): the os label first, resources before node affinity,
// node affinity before host ports.
func TestNodeAdmit(t *testing.T) {
	node := Node{Name: "edge-1", Labels: NodeLabels("edge-1", map[string]string{"zone": "a"}), Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("10")}}
	with := func(p *corev1.Pod, f func(*corev1.Pod)) *corev1.Pod { f(p); return p }
	selector := func(k, v string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{k: v} }
	}
	required := func(key string, op corev1.NodeSelectorOperator, field bool, values ...string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			req := []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}
			term := corev1.NodeSelectorTerm{MatchExpressions: req}
			if field {
				term = corev1.NodeSelectorTerm{MatchFields: req}
			}
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: corev1.NodeSelectorTerm{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}}}},
			}}
		}
	}
	osLabel := func(os string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Labels = map[string]string{corev1.LabelOSStable: os} }
	}
	affinity := Result{Reason: ReasonNodeAffinity, Message: MessageNodeAffinity}
	osMismatch := Result{Reason: ReasonOSSelectorMismatch, Message: MessageOSSelector}
	admit := Result{Admit: true}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		admitted []*corev1.Pod
		want     Result
	}{
		{"no selector", pod("", ""), nil, admit},
		{"selector matches", with(pod("", ""), selector("zone", "a")), nil, admit},
		{"selector on os", with(pod("", ""), selector(corev1.LabelOSStable, runtime.GOOS)), nil, admit},
		{"selector on hostname", with(pod("", ""), selector(corev1.LabelHostname, "edge-1")), nil, admit},
		{"selector differs", with(pod("", ""), selector("zone", "b")), nil, affinity},
		{"selector label missing", with(pod("", ""), selector("gpu", "true")), nil, affinity},
		{"required matches, preferred ignored", with(pod("", ""), required("zone", corev1.NodeSelectorOpIn, false, "a", "b")), nil, admit},
		{"required differs", with(pod("", ""), required("zone", corev1.NodeSelectorOpNotIn, false, "a")), nil, affinity},
		{"required on the node name", with(pod("", ""), required("metadata.name", corev1.NodeSelectorOpIn, true, "edge-1")), nil, admit},
		{"required on another node name", with(pod("", ""), required("metadata.name", corev1.NodeSelectorOpIn, true, "edge-2")), nil, affinity},
		{"os label matches", with(pod("", ""), osLabel(runtime.GOOS)), nil, admit},
		{"os label differs", with(pod("", ""), osLabel("windows")), nil, osMismatch},
		{"os label before resources", with(pod("2", ""), osLabel("windows")), nil, osMismatch},
		{"resources before affinity", with(pod("2", ""), selector("zone", "b")), nil, Result{Reason: "OutOfcpu",
			Message: "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000"}},
		{"affinity before host ports", with(pod("", "", port("", "", 8080)), selector("zone", "b")), []*corev1.Pod{pod("", "", port("", "", 8080))}, affinity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := node.Admit(tt.pod, tt.admitted); got != tt.want {
				t.Fatalf("Admit = %+v, want %+v", got, tt.want)
			}
		})
	}
}
