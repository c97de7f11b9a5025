package podset

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// pod builds a desired pod "default/name" with a UID and config hash.
func pod(name, uid, hash string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "default", UID: types.UID(uid),
		Annotations: map[string]string{wellknown.AnnotationConfigHash: hash},
	}}
}

func render(us []Update) []string {
	out := []string{}
	for _, u := range us {
		out = append(out, fmt.Sprintf("%s %s/%s %s", u.Op, u.Pod.Name, u.Pod.UID, u.Pod.Annotations[wellknown.AnnotationConfigHash]))
	}
	return out
}

func TestApply(t *testing.T) {
	tests := []struct {
		name  string
		steps [][]*corev1.Pod
		want  [][]string // updates per step
	}{
		{
			name:  "add",
			steps: [][]*corev1.Pod{{pod("a", "u1", "h1"), pod("b", "u2", "h2")}},
			want:  [][]string{{"ADD a/u1 h1", "ADD b/u2 h2"}},
		},
		{
			name:  "no change",
			steps: [][]*corev1.Pod{{pod("a", "u1", "h1")}, {pod("a", "u1", "h1")}},
			want:  [][]string{{"ADD a/u1 h1"}, {}},
		},
		{
			name:  "remove gives the old pod",
			steps: [][]*corev1.Pod{{pod("a", "u1", "h1"), pod("b", "u2", "h2")}, {pod("b", "u2", "h2")}},
			want:  [][]string{{"ADD a/u1 h1", "ADD b/u2 h2"}, {"REMOVE a/u1 h1"}},
		},
		{
			name:  "changed manifest: new UID is remove then add",
			steps: [][]*corev1.Pod{{pod("a", "u1", "h1")}, {pod("a", "u9", "h9")}},
			want:  [][]string{{"ADD a/u1 h1"}, {"REMOVE a/u1 h1", "ADD a/u9 h9"}},
		},
		{
			name:  "explicit UID with new hash is update",
			steps: [][]*corev1.Pod{{pod("a", "fixed", "h1")}, {pod("a", "fixed", "h2")}},
			want:  [][]string{{"ADD a/fixed h1"}, {"UPDATE a/fixed h2"}},
		},
		{
			name: "mixed, removes sorted first",
			steps: [][]*corev1.Pod{
				{pod("c", "u3", "h3"), pod("a", "u1", "h1"), pod("b", "fixed", "h2")},
				{pod("d", "u4", "h4"), pod("b", "fixed", "h5")},
			},
			want: [][]string{
				{"ADD c/u3 h3", "ADD a/u1 h1", "ADD b/fixed h2"},
				{"REMOVE a/u1 h1", "REMOVE c/u3 h3", "UPDATE b/fixed h5", "ADD d/u4 h4"},
			},
		},
		{
			name:  "empty snapshot removes all",
			steps: [][]*corev1.Pod{{pod("a", "u1", "h1")}, nil},
			want:  [][]string{{"ADD a/u1 h1"}, {"REMOVE a/u1 h1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			for i, pods := range tt.steps {
				got := render(c.Apply(source.Snapshot{Pods: pods}))
				if !reflect.DeepEqual(got, tt.want[i]) {
					t.Errorf("step %d: got %q, want %q", i, got, tt.want[i])
				}
			}
			last := tt.steps[len(tt.steps)-1]
			if got := c.Pods(); len(got) != len(last) {
				t.Errorf("Pods() = %d pods, want %d", len(got), len(last))
			}
		})
	}
}

func TestWarningsAndFileErrors(t *testing.T) {
	c := New()
	a := pod("a", "u1", "h1")
	c.Apply(source.Snapshot{Pods: []*corev1.Pod{a}})
	fe := source.FileError{
		File: "/etc/podhost/manifests/a.yaml",
		Err:  errors.New("a.yaml: spec.containers[0].image: Required value\na.yaml: spec.x: bad"),
		Kept: []string{"default/a"},
	}
	if us := c.Apply(source.Snapshot{Pods: []*corev1.Pod{a}, Errors: []source.FileError{fe}}); len(us) != 0 {
		t.Fatalf("kept pod produced updates: %v", render(us))
	}
	w := c.Warnings("default/a")
	if len(w) != 1 || !strings.Contains(w[0], "last good version") || !strings.Contains(w[0], "image: Required value (and more)") {
		t.Errorf("Warnings = %q", w)
	}
	if len(c.Warnings("default/b")) != 0 {
		t.Error("warnings for an unrelated pod")
	}
	if got := c.FileErrors(); len(got) != 1 || got[0].File != fe.File {
		t.Errorf("FileErrors = %v", got)
	}
	c.Apply(source.Snapshot{Pods: []*corev1.Pod{a}})
	if len(c.Warnings("default/a")) != 0 || len(c.FileErrors()) != 0 {
		t.Error("warnings not cleared after the file was fixed")
	}
}
