package order

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
)

func pod(name, after string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	if after != "" {
		p.Annotations = map[string]string{wellknown.AnnotationAfter: after}
	}
	return p
}

func names(levels [][]*corev1.Pod) string {
	var ls []string
	for _, l := range levels {
		var ns []string
		for _, p := range l {
			ns = append(ns, p.Name)
		}
		ls = append(ls, strings.Join(ns, ","))
	}
	return strings.Join(ls, " | ")
}

func TestAfter(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""}, {" ", ""}, {"db", "db"}, {" db , cache ,,db", "db|cache"},
	} {
		if got := strings.Join(After(pod("x", tc.in)), "|"); got != tc.want {
			t.Errorf("After(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLevels(t *testing.T) {
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want string
	}{
		{"none", nil, ""},
		{"independent", []*corev1.Pod{pod("b", ""), pod("a", "")}, "a,b"},
		{"chain", []*corev1.Pod{pod("app", "db,cache"), pod("db", ""), pod("cache", "db")}, "db | cache | app"},
		{"outside the set ignored", []*corev1.Pod{pod("app", "gone")}, "app"},
		{"diamond", []*corev1.Pod{pod("d", "b,c"), pod("b", "a"), pod("c", "a"), pod("a", "")}, "a | b,c | d"},
		{"cycle last", []*corev1.Pod{pod("x", "y"), pod("y", "x"), pod("z", "")}, "z | x,y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(Levels(tc.pods)); got != tc.want {
				t.Errorf("Levels = %q, want %q", got, tc.want)
			}
		})
	}
	if got := names(StopLevels([]*corev1.Pod{pod("app", "db"), pod("db", "")})); got != "app | db" {
		t.Errorf("StopLevels = %q", got)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pods    []*corev1.Pod
		missing bool
		want    []string // one substring per problem, in order
	}{
		{"ok", []*corev1.Pod{pod("app", "db"), pod("db", "")}, true, nil},
		{"missing", []*corev1.Pod{pod("app", "db")}, true, []string{"pod default/app: podhost.io/after: pod default/db not found"}},
		{"missing allowed", []*corev1.Pod{pod("app", "db")}, false, nil},
		{"self", []*corev1.Pod{pod("app", "app")}, false, []string{"cannot wait for itself"}},
		{"bad name", []*corev1.Pod{pod("app", "Db_1")}, false, []string{`"Db_1" is not a valid pod name`}},
		{"cycle", []*corev1.Pod{pod("a", "b"), pod("b", "c"), pod("c", "a"), pod("d", "a")}, true,
			[]string{"dependency cycle a -> b -> c -> a", "dependency cycle b -> c -> a -> b", "dependency cycle c -> a -> b -> c"}},
		{"other namespace", []*corev1.Pod{pod("app", "db"), {ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "kube"}}}, true,
			[]string{"pod default/db not found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.pods, CheckOptions{Missing: tc.missing})
			if len(got) != len(tc.want) {
				t.Fatalf("Check = %v, want %d problems", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].Err.Error(), w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i].Err, w)
				}
			}
		})
	}
}
