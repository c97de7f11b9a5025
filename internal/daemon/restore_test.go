package daemon

import (
	"testing"
	"time"

	"github.com/podhost/podhost/internal/model/records"
)

func TestRemainingGrace(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		grace   int64
		updated time.Time
		want    int64
	}{
		{"just recorded", 30, now, 30},
		{"10 s spent", 30, now.Add(-10 * time.Second), 20},
		{"all spent", 30, now.Add(-time.Minute), 1},
		{"no time recorded", 30, time.Time{}, 30},
		{"clock went back", 30, now.Add(time.Hour), 30},
		{"zero grace", 0, now, 1},
	} {
		if got := remainingGrace(records.WorkerRecord{GracePeriod: tc.grace, UpdatedAt: tc.updated}, now); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
