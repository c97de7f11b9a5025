package manifest

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
)

// workloadAuditTypes are the workload spec types docs/fields.md covers
// (its "Workload kinds" table), walked as auditTypes are.
var workloadAuditTypes = []reflect.Type{
	reflect.TypeFor[appsv1.DeploymentSpec](),
	reflect.TypeFor[appsv1.ReplicaSetSpec](),
	reflect.TypeFor[appsv1.StatefulSetSpec](),
	reflect.TypeFor[appsv1.DaemonSetSpec](),
	reflect.TypeFor[batchv1.JobSpec](),
	reflect.TypeFor[batchv1.CronJobSpec](),
}

// workloadFieldExamples set one workload field (a line added under spec:
// of the document of that kind): every honoured and refused row has one.
var workloadFieldExamples = map[string]string{
	"DeploymentSpec.replicas":                "",
	"DeploymentSpec.selector":                "",
	"DeploymentSpec.template":                "",
	"DeploymentSpec.paused":                  "paused: true",
	"DeploymentSpec.strategy":                "strategy: {type: Recreate}",
	"DeploymentSpec.minReadySeconds":         "minReadySeconds: 5",
	"StatefulSetSpec.updateStrategy":         "updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 2}}",
	"StatefulSetSpec.minReadySeconds":        "minReadySeconds: 5",
	"DaemonSetSpec.updateStrategy":           "updateStrategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}",
	"DaemonSetSpec.minReadySeconds":          "minReadySeconds: 5",
	"ReplicaSetSpec.replicas":                "",
	"ReplicaSetSpec.selector":                "",
	"ReplicaSetSpec.template":                "",
	"StatefulSetSpec.replicas":               "",
	"StatefulSetSpec.selector":               "",
	"StatefulSetSpec.template":               "",
	"StatefulSetSpec.volumeClaimTemplates":   "volumeClaimTemplates: [{metadata: {name: data}}]",
	"StatefulSetSpec.serviceName":            "serviceName: db",
	"StatefulSetSpec.podManagementPolicy":    "podManagementPolicy: Parallel",
	"StatefulSetSpec.ordinals":               "ordinals: {start: 3}",
	"DaemonSetSpec.selector":                 "",
	"DaemonSetSpec.template":                 "",
	"JobSpec.parallelism":                    "parallelism: 2\n  completions: 4",
	"JobSpec.completions":                    "completions: 3",
	"JobSpec.activeDeadlineSeconds":          "activeDeadlineSeconds: 60",
	"JobSpec.podFailurePolicy":               "podFailurePolicy: {rules: [{action: FailJob, onExitCodes: {operator: In, values: [42]}}]}",
	"JobSpec.successPolicy":                  "successPolicy: {rules: [{succeededCount: 1}]}",
	"JobSpec.backoffLimit":                   "backoffLimit: 2",
	"JobSpec.backoffLimitPerIndex":           "backoffLimitPerIndex: 1",
	"JobSpec.maxFailedIndexes":               "maxFailedIndexes: 1",
	"JobSpec.selector":                       "selector: {matchLabels: {app: web}}",
	"JobSpec.manualSelector":                 "manualSelector: true",
	"JobSpec.template":                       "",
	"JobSpec.ttlSecondsAfterFinished":        "ttlSecondsAfterFinished: 100",
	"JobSpec.completionMode":                 "completionMode: Indexed",
	"JobSpec.suspend":                        "suspend: true",
	"CronJobSpec.schedule":                   "",
	"CronJobSpec.timeZone":                   "timeZone: Asia/Tokyo",
	"CronJobSpec.startingDeadlineSeconds":    "startingDeadlineSeconds: 30",
	"CronJobSpec.concurrencyPolicy":          "concurrencyPolicy: Forbid",
	"CronJobSpec.suspend":                    "suspend: true",
	"CronJobSpec.jobTemplate":                "",
	"CronJobSpec.successfulJobsHistoryLimit": "successfulJobsHistoryLimit: 1",
	"CronJobSpec.failedJobsHistoryLimit":     "failedJobsHistoryLimit: 0",
}

func workloadDoc(kind, line string) string {
	if kind == KindCronJob {
		doc := strings.Replace(cronDoc, "%s", line, 1)
		return doc
	}
	doc := strings.Replace(deploymentDoc, "kind: Deployment", "kind: "+kind, 1)
	if kind == KindJob {
		doc = strings.NewReplacer("apps/v1", "batch/v1", "  replicas: 3\n", "", "  selector:\n    matchLabels: {app: web}\n", "",
			"    spec:\n", "    spec:\n      restartPolicy: Never\n").Replace(doc)
	}
	if kind == KindDaemonSet {
		doc = strings.Replace(doc, "  replicas: 3\n", "", 1)
	}
	if line != "" {
		doc = strings.Replace(doc, "spec:\n", "spec:\n  "+line+"\n", 1)
	}
	return doc
}

func TestWorkloadFieldAuditAgreesWithValidation(t *testing.T) {
	_, rows := readAuditTable(t)
	for _, r := range rows {
		kind := workloadRow(r.key)
		if kind == "" || r.treatment == ignored {
			continue
		}
		t.Run(r.key, func(t *testing.T) {
			line, ok := workloadFieldExamples[r.key]
			if !ok {
				t.Fatalf("no example for %s (%s): add one to workloadFieldExamples", r.key, r.treatment)
			}
			_, err := DecodeObjects("w.yaml", []byte(workloadDoc(kind, line)))
			switch {
			case r.treatment == refused:
				assertRefused(t, r.key, err)
			case err != nil:
				t.Fatalf("honoured field %s refused: %v", r.key, err)
			}
		})
	}
}

// workloadRow is the workload kind of a docs/fields.md row, "" for a pod row.
func workloadRow(key string) string {
	typ, _, _ := strings.Cut(key, ".")
	if kind, ok := strings.CutSuffix(typ, "Spec"); ok && isWorkloadKind(kind) {
		return kind
	}
	return ""
}
