package daemon

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/kubelet/imagegc"
	"github.com/podhost/podhost/internal/model/records"
)

func (d *daemon) imageGC() *imagegc.Manager {
	return imagegc.New(d.rt, imagegc.Options{FSPath: d.cfg.ImageFSPath, Referenced: d.keptImages, Ready: d.mgr.SourcesReady, Logger: d.log,
		Thresholds: imagegc.Thresholds{High: d.cfg.ImageGCHighThresholdPercent, Low: d.cfg.ImageGCLowThresholdPercent}})
}

// keptImages are the images image GC never removes besides the pinned
// ones and those of containers: every pod the manifests declare (the
// manager's desired set, which holds a refused file's pods at their last
// good version), the pods of every last good copy of a manifest in the
// state db (a file invalid since before this start, a URL down), and the
// versions a rollout may roll back to. Each of them may be needed again
// on a box that cannot pull it.
func (d *daemon) keptImages() []string {
	out := d.mgr.ReferencedImages()
	if recs, err := d.db.ListManifests(); err == nil {
		out = append(out, lastGoodImages(recs)...)
	} else {
		d.log.Warn("image GC: read last good manifests", "err", err)
	}
	if rolls, err := d.db.ListRollouts(); err == nil {
		out = append(out, revisionImages(rolls)...)
	} else {
		d.log.Warn("image GC: read rollout revisions", "err", err)
	}
	return out
}

func lastGoodImages(recs []records.ManifestRecord) []string {
	var out []string
	for _, r := range recs {
		objs, err := manifest.DecodeObjects(r.Path, r.Data)
		if err != nil {
			continue // stored because it decoded; a newer podhost's rules may differ
		}
		for _, p := range objs.Pods {
			out = append(out, imagegc.PodImages(p)...)
		}
	}
	return out
}

func revisionImages(rolls []records.RolloutRecord) []string {
	var out []string
	for _, r := range rolls {
		for _, rev := range r.Revisions {
			var p corev1.Pod
			if json.Unmarshal(rev.Pod, &p) == nil {
				out = append(out, imagegc.PodImages(&p)...)
			}
		}
	}
	return out
}
