package metrics

import "github.com/prometheus/client_golang/prometheus"

// NewEmptyDirQuotas is podhost_emptydir_project_quotas: how many disk
// emptyDirs count reports measured by their project quota
// (*fsquota.Manager.Count); every other one is walked.
func NewEmptyDirQuotas(count func() int) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "podhost_emptydir_project_quotas",
		Help: "Disk emptyDirs measured by their filesystem project quota (pods with hostUsers: false on ext4/XFS mounted prjquota); every other disk emptyDir is measured by walking it.",
	}, func() float64 { return float64(count()) })
}
