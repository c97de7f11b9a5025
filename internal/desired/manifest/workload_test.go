package manifest

import (
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// The values k8s.io/kubernetes v1.37.2's pkg/controller.ComputeHash gives
// for these templates (computed with that package in a throw-away module).
func TestComputeHashMatchesUpstream(t *testing.T) {
	one := int32(1)
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27", Command: []string{"sh", "-c", "sleep 1"}}}}}
	for _, c := range []struct {
		tmpl      corev1.PodTemplateSpec
		collision *int32
		want      string
	}{
		{tmpl, nil, "84b56f94f6"},
		{tmpl, &one, "ffd65db89"},
		{corev1.PodTemplateSpec{}, nil, "54f4c57dcb"},
	} {
		if got := ComputeHash(&c.tmpl, c.collision); got != c.want {
			t.Errorf("ComputeHash = %q, want upstream's %q", got, c.want)
		}
	}
}

const deploymentDoc = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        command: [sh, -c, sleep 1]
`

func decodeWorkloadDoc(t *testing.T, doc string) Objects {
	t.Helper()
	objs, err := DecodeObjects("w.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

var generatedSuffix = regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]{5}$`)

func TestDeploymentPods(t *testing.T) {
	objs := decodeWorkloadDoc(t, deploymentDoc)
	if len(objs.Workloads) != 1 || len(objs.Pods) != 3 {
		t.Fatalf("workloads %d, pods %d; want 1, 3", len(objs.Workloads), len(objs.Pods))
	}
	hash := "84b56f94f6" // the template as written (TestComputeHashMatchesUpstream)
	seen := map[string]bool{}
	for _, p := range objs.Pods {
		rs, suffix, _ := strings.Cut(p.Name, "-"+hash+"-")
		if rs != "web" || !generatedSuffix.MatchString(suffix) {
			t.Errorf("pod name %q, want web-%s-<5 chars of rand's alphabet>", p.Name, hash)
		}
		if seen[p.Name] {
			t.Errorf("pod name %q twice", p.Name)
		}
		seen[p.Name] = true
		if p.Labels["app"] != "web" || p.Labels["pod-template-hash"] != hash {
			t.Errorf("%s: labels %v", p.Name, p.Labels)
		}
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "ReplicaSet" || p.OwnerReferences[0].Name != "web-"+hash ||
			p.OwnerReferences[0].UID == "" || p.OwnerReferences[0].Controller == nil || !*p.OwnerReferences[0].Controller {
			t.Errorf("%s: ownerReferences %+v", p.Name, p.OwnerReferences)
		}
		if p.UID == "" || p.Namespace != "default" || p.Annotations[wellknown.AnnotationConfigSource] != "w.yaml" {
			t.Errorf("%s: uid %q namespace %q annotations %v", p.Name, p.UID, p.Namespace, p.Annotations)
		}
	}
	// Stable: the same file gives the same pods (names and UIDs) again.
	again := decodeWorkloadDoc(t, deploymentDoc)
	for i, p := range again.Pods {
		if p.Name != objs.Pods[i].Name || p.UID != objs.Pods[i].UID {
			t.Errorf("pod %d: %s/%s then %s/%s", i, objs.Pods[i].Name, objs.Pods[i].UID, p.Name, p.UID)
		}
	}
	// Scaling down keeps the first replicas; a template edit renames them all.
	two := decodeWorkloadDoc(t, strings.Replace(deploymentDoc, "replicas: 3", "replicas: 2", 1))
	if len(two.Pods) != 2 || two.Pods[0].Name != objs.Pods[0].Name || two.Pods[1].Name != objs.Pods[1].Name {
		t.Errorf("replicas 2: %v", names(two.Pods))
	}
	edited := decodeWorkloadDoc(t, strings.Replace(deploymentDoc, "sleep 1", "sleep 2", 1))
	for _, p := range edited.Pods {
		if seen[p.Name] || p.Labels["pod-template-hash"] == hash {
			t.Errorf("edited template: pod %s (hash %s) kept the old name or hash", p.Name, p.Labels["pod-template-hash"])
		}
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestStatefulSetPods(t *testing.T) {
	doc := strings.NewReplacer("kind: Deployment", "kind: StatefulSet", "spec:\n  replicas", "spec:\n  serviceName: db\n  ordinals: {start: 1}\n  replicas").Replace(deploymentDoc)
	objs := decodeWorkloadDoc(t, doc)
	if got := strings.Join(names(objs.Pods), ","); got != "web-1,web-2,web-3" {
		t.Fatalf("pods %s, want web-1,web-2,web-3", got)
	}
	for i, p := range objs.Pods {
		if p.Spec.Hostname != p.Name || p.Spec.Subdomain != "db" {
			t.Errorf("%s: hostname %q subdomain %q", p.Name, p.Spec.Hostname, p.Spec.Subdomain)
		}
		if p.Labels["statefulset.kubernetes.io/pod-name"] != p.Name || p.Labels["apps.kubernetes.io/pod-index"] != p.Name[4:] ||
			!strings.HasPrefix(p.Labels["controller-revision-hash"], "web-") {
			t.Errorf("%s: labels %v", p.Name, p.Labels)
		}
		want := ""
		if i > 0 {
			want = objs.Pods[i-1].Name
		}
		if got := p.Annotations[wellknown.AnnotationAfter]; got != want {
			t.Errorf("%s: %s %q, want %q (OrderedReady)", p.Name, wellknown.AnnotationAfter, got, want)
		}
		if p.OwnerReferences[0].Kind != "StatefulSet" || p.OwnerReferences[0].Name != "web" {
			t.Errorf("%s: owner %+v", p.Name, p.OwnerReferences[0])
		}
	}
	parallel := decodeWorkloadDoc(t, strings.Replace(doc, "serviceName: db", "serviceName: db\n  podManagementPolicy: Parallel", 1))
	for _, p := range parallel.Pods {
		if p.Annotations[wellknown.AnnotationAfter] != "" {
			t.Errorf("Parallel: %s follows %q", p.Name, p.Annotations[wellknown.AnnotationAfter])
		}
	}
}

func TestDaemonSetAndReplicaSetPods(t *testing.T) {
	ds := strings.NewReplacer("kind: Deployment", "kind: DaemonSet", "  replicas: 3\n", "").Replace(deploymentDoc)
	objs := decodeWorkloadDoc(t, ds)
	if len(objs.Pods) != 1 || !strings.HasPrefix(objs.Pods[0].Name, "web-") || !generatedSuffix.MatchString(objs.Pods[0].Name[4:]) {
		t.Fatalf("DaemonSet pods %v, want one web-<5 chars>", names(objs.Pods))
	}
	if l := objs.Pods[0].Labels; l["controller-revision-hash"] == "" || l["pod-template-generation"] != "1" {
		t.Errorf("DaemonSet pod labels %v", l)
	}
	rs := decodeWorkloadDoc(t, strings.Replace(deploymentDoc, "kind: Deployment", "kind: ReplicaSet", 1))
	if len(rs.Pods) != 3 || rs.Pods[0].OwnerReferences[0].Kind != "ReplicaSet" || rs.Pods[0].OwnerReferences[0].Name != "web" {
		t.Fatalf("ReplicaSet pods %v", names(rs.Pods))
	}
}

// A bad workload is one line per problem naming the field, as for pods;
// the template's errors name their path in the workload.
func TestWorkloadErrors(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"template field", strings.Replace(deploymentDoc, "image: nginx:1.27", "image: \"\"", 1),
			"w.yaml: spec.template.spec.containers[0].image: Required value"},
		{"selector mismatch", strings.Replace(deploymentDoc, "matchLabels: {app: web}", "matchLabels: {app: db}", 1),
			"w.yaml: spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"},
		{"replicas bound", strings.Replace(deploymentDoc, "replicas: 3", "replicas: 100000", 1),
			"w.yaml: spec.replicas: Invalid value: 100000: must be between 0 and 250 on one node"},
		{"paused", strings.Replace(deploymentDoc, "replicas: 3", "replicas: 3\n  paused: true", 1),
			"w.yaml: spec.paused: Forbidden: a paused Deployment (its template is the pods' now: edit the file when ready) is not supported by podhost"},
		{"volumeClaimTemplates", strings.NewReplacer("kind: Deployment", "kind: StatefulSet", "replicas: 3", "replicas: 3\n  volumeClaimTemplates: [{metadata: {name: data}}]").Replace(deploymentDoc),
			"w.yaml: spec.volumeClaimTemplates: Forbidden: volumeClaimTemplates (no volume provisioner on one node: use a hostPath volume in the template) is not supported by podhost"},
		{"OnDelete", strings.NewReplacer("kind: Deployment", "kind: StatefulSet", "replicas: 3", "replicas: 3\n  updateStrategy: {type: OnDelete}").Replace(deploymentDoc),
			`w.yaml: spec.updateStrategy.type: Unsupported value: "OnDelete": not supported by podhost (a template edit is rolled out: use RollingUpdate)`},
		{"partition", strings.NewReplacer("kind: Deployment", "kind: StatefulSet", "replicas: 3", "replicas: 3\n  updateStrategy: {rollingUpdate: {partition: 2}}").Replace(deploymentDoc),
			"w.yaml: spec.updateStrategy.rollingUpdate.partition: Forbidden: a partition (a staged rollout) is not supported by podhost"},
		{"surge and unavailable 0", strings.Replace(deploymentDoc, "replicas: 3", "replicas: 3\n  strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 0%}}", 1),
			"w.yaml: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"0%\": may not be 0 when `maxSurge` is 0"},
		{"bad percentage", strings.Replace(deploymentDoc, "replicas: 3", "replicas: 3\n  strategy: {rollingUpdate: {maxSurge: lots}}", 1),
			"w.yaml: spec.strategy.rollingUpdate.maxSurge: Invalid value: \"lots\": must be an integer or percentage (e.g '5%')"},
		{"StatefulSet hostname", strings.NewReplacer("kind: Deployment", "kind: StatefulSet", "name: web\nspec", "name: web.example\nspec").Replace(deploymentDoc),
			`w.yaml: metadata.name: Invalid value: "web.example": a StatefulSet's pods have the hostname NAME-ORDINAL (web.example-2): must not contain dots`},
		{"unknown field", strings.Replace(deploymentDoc, "replicas: 3", "replicas: 3\n  replica: 2", 1),
			"w.yaml: spec.replica: unknown field"},
		{"kinds and names apart", deploymentDoc + "---\n" + strings.Replace(deploymentDoc, "kind: Deployment", "kind: ReplicaSet", 1) + "---\n" +
			strings.NewReplacer("kind: Deployment", "kind: StatefulSet", "name: web\nspec", "name: web-84b56f94f6\nspec").Replace(deploymentDoc), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeObjects("w.yaml", []byte(c.doc))
			if c.want == "" {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant %s", err, c.want)
			}
		})
	}
}

func TestWorkloadPodNameClash(t *testing.T) {
	sts := strings.Replace(deploymentDoc, "kind: Deployment", "kind: StatefulSet", 1)
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: web-0}\nspec:\n  containers: [{name: c, image: nginx:1.27}]\n"
	_, err := DecodeObjects("w.yaml", []byte(sts+"---\n"+pod))
	if err == nil || !strings.Contains(err.Error(), `[doc 2] metadata.name: Duplicate value: "default/web-0"`) {
		t.Fatalf("got %v, want a duplicate pod name", err)
	}
}

// A big template times many replicas is refused before any pod is made:
// memory per file stays bounded by bytes.
func TestWorkloadExpansionBounded(t *testing.T) {
	big := strings.Repeat("x", 100<<10) // 100 KiB of one env value
	doc := strings.Replace(deploymentDoc, "replicas: 3", "replicas: 200", 1) +
		"        env: [{name: BIG, value: " + big + "}]\n"
	_, err := DecodeObjects("w.yaml", []byte(doc))
	if err == nil || !strings.Contains(err.Error(), "w.yaml: spec.template: Invalid value: 200 pods of a") {
		t.Fatalf("got %v, want the expansion refused", err)
	}
	if _, err := DecodeObjects("w.yaml", []byte(strings.Replace(doc, "replicas: 200", "replicas: 3", 1))); err != nil {
		t.Fatalf("3 replicas of the same template: %v", err)
	}
}

// Workloads as vendors write them decode into their pods.
func TestGoodWorkloads(t *testing.T) {
	objs, err := ReadFile("testdata/good/workloads.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3+2+1+1 {
		t.Fatalf("%d pods, want 7 (3 nginx, 2 redis, 1 node-exporter, 1 migrate)", len(objs))
	}
}

// BenchmarkDecodeDeployment250: a Deployment of the most replicas one
// workload may have, decoded into its 250 pods.
func BenchmarkDecodeDeployment250(b *testing.B) {
	doc := []byte(strings.Replace(deploymentDoc, "replicas: 3", "replicas: 250", 1))
	for b.Loop() {
		if _, err := DecodeObjects("w.yaml", doc); err != nil {
			b.Fatal(err)
		}
	}
}
