package manifest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

const serviceDoc = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - port: 80
`

func TestDecodeService(t *testing.T) {
	data := serviceDoc + "---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: web\n  namespace: shop\n---\n" + podDocNamed("a")
	objs, err := DecodeObjects("app.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Services) != 1 || len(objs.ServiceAccounts) != 1 || len(objs.Pods) != 1 {
		t.Fatalf("got %d services, %d service accounts, %d pods", len(objs.Services), len(objs.ServiceAccounts), len(objs.Pods))
	}
	svc := objs.Services[0]
	if svc.Namespace != "default" || svc.Spec.Ports[0].Protocol != "TCP" || svc.Spec.Ports[0].TargetPort != intstr.FromInt32(80) {
		t.Errorf("service not defaulted: %+v", svc)
	}
	if objs.ServiceAccounts[0].Namespace != "shop" {
		t.Errorf("service account namespace %q", objs.ServiceAccounts[0].Namespace)
	}
}

func TestDecodeServiceRefusals(t *testing.T) {
	for _, tc := range []struct{ edit, want string }{
		{"spec:\n  type: NodePort\n", `svc.yaml: spec.type: Forbidden: spec.type is not supported by podhost (NodePort: no node ports`},
		{"spec:\n  type: LoadBalancer\n", `svc.yaml: spec.type: Forbidden: spec.type is not supported by podhost (LoadBalancer:`},
		{"spec:\n  clusterIP: 10.96.0.10\n", `svc.yaml: spec.clusterIP: Forbidden: spec.clusterIP is not supported by podhost (podhost picks the virtual IP`},
		{"spec:\n  sessionAffinity: ClientIP\n", `svc.yaml: spec.sessionAffinity: Forbidden: spec.sessionAffinity is not supported by podhost`},
		{"spec:\n  externalName: example.com\n", `svc.yaml: spec.externalName: Forbidden`},
		{"  - port: 80\n    targetPort: 8080\n  clusterIP: None\n", `svc.yaml: spec.ports[0].targetPort: Forbidden: spec.ports[0].targetPort is not supported by podhost (clusterIP None: clients reach a pod's IP at port 80, so targetPort must be 80 or a port name)`},
		{"  - port: 80\n    nodePort: 30080\n", `svc.yaml: spec.ports[0].nodePort: Forbidden`},
		{"  - port: 80\n  - port: 81\n", `svc.yaml: spec.ports[0].name: Required value`},
		{"metadata:\n  name: 1web\n", `svc.yaml: metadata.name: Invalid value: "1web"`},
		{"spec:\n  bogus: 1\n", `svc.yaml: spec.bogus`},
	} {
		doc := serviceDoc
		switch {
		case strings.HasPrefix(tc.edit, "spec:\n"):
			doc = strings.Replace(doc, "spec:\n", tc.edit, 1)
		case strings.HasPrefix(tc.edit, "metadata:\n"):
			doc = strings.Replace(doc, "metadata:\n  name: web\n", tc.edit, 1)
		default:
			doc = strings.Replace(doc, "  - port: 80\n", tc.edit, 1)
		}
		_, err := DecodeObjects("svc.yaml", []byte(doc))
		if got := errString(err); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q:\n got %s\nwant %s...", tc.edit, got, tc.want)
		}
	}
}

func TestDecodeServiceNamedTargetPortAndHeadless(t *testing.T) {
	doc := strings.Replace(serviceDoc, "  - port: 80\n", "  - port: 80\n    name: http\n    targetPort: http\n", 1)
	doc = strings.Replace(doc, "spec:\n", "spec:\n  clusterIP: None\n  publishNotReadyAddresses: true\n", 1)
	objs, err := DecodeObjects("svc.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if tp := objs.Services[0].Spec.Ports[0].TargetPort; tp.StrVal != "http" {
		t.Errorf("targetPort %v", tp)
	}
	// Two Services of one name in a file: refused as for every kind.
	if _, err := DecodeObjects("svc.yaml", []byte(serviceDoc+"---\n"+serviceDoc)); !strings.Contains(errString(err), "Duplicate value") {
		t.Errorf("duplicate: %v", err)
	}
}
