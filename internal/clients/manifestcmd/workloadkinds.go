package manifestcmd

import (
	"strings"

	"github.com/podhost/podhost/internal/desired/manifestdir"
)

// workloadKindOf maps kubectl's words for the workload kinds (plural,
// singular, short name, with or without the group) to their kind.
func workloadKindOf(word string) (manifestdir.Kind, bool) {
	w, _, _ := strings.Cut(strings.ToLower(word), ".") // "deployments.apps"
	switch w {
	case "deployment", "deployments", "deploy":
		return manifestdir.Deployment, true
	case "replicaset", "replicasets", "rs":
		return manifestdir.ReplicaSet, true
	case "statefulset", "statefulsets", "sts":
		return manifestdir.StatefulSet, true
	case "daemonset", "daemonsets", "ds":
		return manifestdir.DaemonSet, true
	case "job", "jobs":
		return manifestdir.Job, true
	case "cronjob", "cronjobs", "cj":
		return manifestdir.CronJob, true
	}
	return "", false
}
