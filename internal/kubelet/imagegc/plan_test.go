package imagegc

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func img(ref, digest string, size int64, age int) Image {
	return Image{Ref: ref, Digest: digest, Size: size, LastUsed: t0.Add(time.Duration(age) * time.Hour)}
}

func TestToFree(t *testing.T) {
	tests := []struct {
		name string
		u    Usage
		th   Thresholds
		want int64
	}{
		{"below high", Usage{Capacity: 100, Available: 20}, Thresholds{85, 80}, 0},
		{"at high", Usage{Capacity: 100, Available: 15}, Thresholds{85, 80}, 5},
		{"full", Usage{Capacity: 1000, Available: 0}, Thresholds{85, 80}, 200},
		{"gc off at 100", Usage{Capacity: 100, Available: 0}, Thresholds{100, 80}, 0},
		{"no capacity", Usage{}, Thresholds{1, 0}, 0},
		{"tiny thresholds", Usage{Capacity: 100, Available: 90}, Thresholds{1, 0}, 10},
	}
	for _, tt := range tests {
		if got := ToFree(tt.u, tt.th); got != tt.want {
			t.Errorf("%s: ToFree = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestPlan(t *testing.T) {
	imgs := []Image{
		img("a:1", "da", 10, 3),
		img("b:1", "db", 10, 1), // oldest
		img("b:alias", "db", 10, 2),
		img("c:1", "dc", 10, 0), // oldest but in use
		img("d:1", "dd", 10, 5),
		img("e:1", "dc", 10, 9), // same digest as an image in use
	}
	inUse := func(i Image) bool { return i.Ref == "c:1" }
	tests := []struct {
		name string
		want int64
		out  []string
	}{
		{"nothing to free", 0, nil},
		{"one digest, all its refs", 5, []string{"b:1", "b:alias"}},
		{"least recently used first", 15, []string{"b:1", "b:alias", "a:1"}},
		{"everything unused, never the used digest", 1000, []string{"b:1", "b:alias", "a:1", "d:1"}},
	}
	for _, tt := range tests {
		if got := Plan(imgs, inUse, tt.want); !slices.Equal(got, tt.out) {
			t.Errorf("%s: Plan = %v, want %v", tt.name, got, tt.out)
		}
	}
	if got, want := Unused(imgs, inUse), []string{"b:1", "b:alias", "a:1", "d:1"}; !slices.Equal(got, want) {
		t.Errorf("Unused = %v, want %v", got, want)
	}
}

func TestMatcher(t *testing.T) {
	m := Matcher([]string{"busybox", "registry.local:5000/app@sha256:abc", ""})
	tests := []struct {
		img  Image
		want bool
	}{
		{Image{Ref: "docker.io/library/busybox:latest"}, true},
		{Image{Ref: "docker.io/library/busybox:1.36"}, false},
		{Image{Ref: "registry.local:5000/app:v1", Digest: "sha256:abc"}, true},
		{Image{Ref: "import@sha256:def", Digest: "sha256:def"}, false},
	}
	for _, tt := range tests {
		if got := m(tt.img); got != tt.want {
			t.Errorf("match %+v = %v, want %v", tt.img, got, tt.want)
		}
	}
}

func TestPlanNeverRemovesPinned(t *testing.T) {
	old := time.Unix(1, 0)
	imgs := []Image{
		{Ref: "a:1", Digest: "sha256:a", Size: 10, LastUsed: old, Pinned: "images-dir:a.tar"},
		{Ref: "a:alias", Digest: "sha256:a", Size: 10, LastUsed: old}, // another name of a pinned digest
		{Ref: "b:1", Digest: "sha256:b", Size: 10, LastUsed: old.Add(time.Hour)},
	}
	got := Plan(imgs, func(Image) bool { return false }, 1<<40)
	if len(got) != 1 || got[0] != "b:1" {
		t.Fatalf("Plan = %v, want only b:1 (a is pinned)", got)
	}
	if got := Unused(imgs, func(Image) bool { return false }); len(got) != 1 || got[0] != "b:1" {
		t.Fatalf("Unused = %v, want only b:1", got)
	}
}
