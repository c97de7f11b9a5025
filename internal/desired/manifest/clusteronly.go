package manifest

// webhookReason is why the admission kinds are refused.
const webhookReason = "admission by a cluster's API server"

// clusterOnlyKinds are kinds that `helm template` output and vendors'
// install YAML commonly carry whose meaning lives in a cluster's API server,
// its controllers or its network plugin: still refused by kind, but the
// refusal says why podhost cannot honour them (docs/manifests.md#helm-charts).
// Dropping them silently would change what a user relies on (who may call
// the API, what traffic is filtered, what is admitted), so none is
// accepted-and-ignored (the kinds that are, because podhost has nothing
// they could grant or restrict, are ignored.go's).
var clusterOnlyKinds = map[string]string{
	"CustomResourceDefinition":         "a custom resource of a cluster's API server",
	"MutatingWebhookConfiguration":     webhookReason,
	"ValidatingWebhookConfiguration":   webhookReason,
	"ValidatingAdmissionPolicy":        webhookReason,
	"ValidatingAdmissionPolicyBinding": webhookReason,
	"Ingress":                          "routed by a cluster's ingress controller; a pod's hostPort reaches a pod from outside",
	"IngressClass":                     "routed by a cluster's ingress controller; a pod's hostPort reaches a pod from outside",
	"NetworkPolicy":                    "podhost does not filter pod traffic",
	"PodDisruptionBudget":              "it limits evictions through the API, which podhost's kube API serves without budgets",
	"HorizontalPodAutoscaler":          "a cluster's controller scales from metrics.k8s.io; podhost runs the replicas the manifest names",
}

// unsupportedKindReason is what follows "not supported by podhost" for a
// kind podhost does not take: why, for a kind of clusterOnlyKinds, then
// the kinds it takes.
func unsupportedKindReason(kind string) string {
	taken := "only Pod, ConfigMap, Secret, Service, ServiceAccount, " + workloadKindList() + "; RBAC kinds and the metrics APIService without effect"
	if why, ok := clusterOnlyKinds[kind]; ok {
		return "(" + why + "; " + taken + ")"
	}
	return "(" + taken + ")"
}
