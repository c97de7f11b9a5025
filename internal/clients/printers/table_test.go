package printers

import "testing"

func TestLabelHeader(t *testing.T) {
	for key, want := range map[string]string{"app": "APP", "Tier": "TIER", "app.kubernetes.io/name": "NAME", "example.com/a/b": "B"} {
		if got := labelHeader(key); got != want {
			t.Errorf("labelHeader(%q) = %q, want %q", key, got, want)
		}
	}
}
