package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func gaugeValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func TestEmptyDirQuotas(t *testing.T) {
	n := 3
	c := NewEmptyDirQuotas(func() int { return n })
	if got := gaugeValue(t, c); got != 3 {
		t.Fatalf("podhost_emptydir_project_quotas = %v, want 3", got)
	}
	n = 1
	if got := gaugeValue(t, c); got != 1 {
		t.Fatalf("after a release: %v, want 1", got)
	}
}
