package api

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeBackend serves a fixed node, or an error.
type nodeBackend struct {
	fakeBackend
	node *corev1.Node
	err  error
}

func (b nodeBackend) Node(context.Context) (*corev1.Node, error) { return b.node, b.err }

func TestNodeRoundTrip(t *testing.T) {
	boot := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}}
	n.Name, n.Labels, n.CreationTimestamp = "host1", map[string]string{"kubernetes.io/hostname": "host1"}, metav1.NewTime(boot)
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3500m")}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	n.Status.NodeInfo.ContainerRuntimeVersion = "containerd://v2.1.4"
	c := startServer(t, nodeBackend{node: n})
	got, err := c.Node(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cpu := got.Status.Allocatable[corev1.ResourceCPU]
	if got.Kind != "Node" || got.Name != "host1" || got.Labels["kubernetes.io/hostname"] != "host1" || !got.CreationTimestamp.Time.Equal(boot) ||
		cpu.MilliValue() != 3500 || len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Reason != "KubeletReady" ||
		got.Status.NodeInfo.ContainerRuntimeVersion != "containerd://v2.1.4" {
		t.Errorf("node came back as %+v", got)
	}

	c = startServer(t, nodeBackend{err: errors.New("boom")})
	if _, err := c.Node(context.Background()); err == nil || err.Error() != "500 Internal Server Error: node: boom" {
		t.Errorf("failing backend: %v", err)
	}
}
