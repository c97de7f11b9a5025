// Package imagegc is podhost's image garbage collection, after the
// kubelet's (pkg/kubelet/images/image_gc_manager.go): when the filesystem
// holding containerd's content and snapshots reaches the high threshold,
// images no pod uses are removed, least recently used first, until usage
// is back under the low threshold. An image a manifest in the directory
// references is never removed, even if its pod is not running; nor one a
// container (of any pod, even an orphan) was created from; nor a pinned
// one (label podhost.io/pinned: the images directory's).
//
// Images are grouped by digest: removing one tag of a digest another tag
// still names frees nothing, so a digest goes with all its names or not
// at all.
package imagegc

import (
	"sort"
	"time"
)

// Image is one named image.
type Image struct {
	Ref, Digest string
	Size        int64
	LastUsed    time.Time
	// Pinned: the image's podhost.io/pinned label (the images directory):
	// its digest is never removed, like one in use.
	Pinned string
}

// Usage is the image filesystem's size and free space, in bytes.
type Usage struct {
	Capacity, Available int64
}

// Percent is the used share, rounded down, as the kubelet computes it.
func (u Usage) Percent() int {
	if u.Capacity <= 0 {
		return 0
	}
	return int(100 - u.Available*100/u.Capacity)
}

// Thresholds are imageGCHighThresholdPercent and imageGCLowThresholdPercent.
type Thresholds struct{ High, Low int }

// ToFree is how many bytes must go to bring usage down to t.Low: 0 below
// t.High (or when High is 100: GC off).
func ToFree(u Usage, t Thresholds) int64 {
	if t.High >= 100 || u.Capacity <= 0 || u.Percent() < t.High {
		return 0
	}
	return u.Capacity*int64(100-t.Low)/100 - u.Available
}

// Plan returns the refs to remove to free want bytes: whole digests none
// of whose refs is in use, least recently used first (a digest's last use
// is that of its most recently used ref); ties by ref for a stable order.
// A digest with a pinned ref is never removed.
func Plan(imgs []Image, inUse func(Image) bool, want int64) []string {
	if want <= 0 {
		return nil
	}
	var out []string
	var freed int64
	for _, g := range candidates(imgs, inUse) {
		if freed >= want {
			break
		}
		out = append(out, g.refs...)
		freed += g.size
	}
	return out
}

// Unused returns the refs of every digest none of whose refs is in use
// (`podhost images prune`).
func Unused(imgs []Image, inUse func(Image) bool) []string {
	var out []string
	for _, g := range candidates(imgs, inUse) {
		out = append(out, g.refs...)
	}
	return out
}

type group struct {
	digest   string
	refs     []string
	size     int64
	lastUsed time.Time
}

// candidates groups imgs by digest, drops the groups with a ref in use and
// sorts the rest least recently used first.
func candidates(imgs []Image, inUse func(Image) bool) []group {
	byDigest := map[string]*group{}
	used := map[string]bool{}
	var order []string
	for _, img := range imgs {
		g, ok := byDigest[img.Digest]
		if !ok {
			g = &group{digest: img.Digest}
			byDigest[img.Digest] = g
			order = append(order, img.Digest)
		}
		g.refs = append(g.refs, img.Ref)
		g.size = max(g.size, img.Size)
		if img.LastUsed.After(g.lastUsed) {
			g.lastUsed = img.LastUsed
		}
		if img.Pinned != "" || inUse(img) {
			used[img.Digest] = true
		}
	}
	var out []group
	for _, d := range order {
		if !used[d] {
			g := *byDigest[d]
			sort.Strings(g.refs)
			out = append(out, g)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].lastUsed.Equal(out[j].lastUsed) {
			return out[i].lastUsed.Before(out[j].lastUsed)
		}
		return out[i].refs[0] < out[j].refs[0]
	})
	return out
}
