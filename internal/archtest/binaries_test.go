package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

// clusterOnly are the packages only podhost-cluster may link: client-go's
// typed clientset (its scheme registers every API group at init), its
// informers, listers and caches, the kubeconfig loader, the kubelet's
// lease controller, k8s.io/apiserver (the kubelet API's delegating
// authentication and authorization), and podhost's cluster agent, its
// kubelet API and its daemon client.
// Linked into podhost they cost every standalone box 36 MB of binary and
// 12–15 MiB of file RSS (docs/decisions.md 29). podhost itself links a
// few client-go packages on purpose (rest and transport for the CLI's
// exec and port-forward streams, the kubeconfig types `podhost
// kubeconfig` writes): those are not listed.
var clusterOnly = []string{
	"k8s.io/client-go/kubernetes",
	"k8s.io/client-go/informers",
	"k8s.io/client-go/listers",
	"k8s.io/client-go/applyconfigurations",
	"k8s.io/client-go/tools/cache",
	"k8s.io/client-go/tools/clientcmd", // the loader, not its api/ types
	"k8s.io/component-helpers/apimachinery/lease",
	"k8s.io/client-go/util/certificate", // the CSR client and the certificate manager (podhost-cluster join)
	"k8s.io/cluster-bootstrap",
	"k8s.io/apiserver", // the kubelet API's delegating authentication and authorization
	module + "internal/services/cluster",
	module + "internal/services/kubeletapi",
	module + "internal/clients/localnode",
}

// TestPodhostLinksNoClientset: the podhost binary (daemon and CLI) links
// none of clusterOnly; podhost-cluster does.
func TestPodhostLinksNoClientset(t *testing.T) {
	deps := func(cmd string) []string {
		out, err := exec.Command("go", "list", "-deps", module+cmd).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", cmd, err)
		}
		return strings.Fields(string(out))
	}
	touchSources()
	linked := func(pkgs []string, prefix string) string {
		for _, p := range pkgs {
			if p == prefix || strings.HasPrefix(p, prefix+"/") && !strings.HasPrefix(p, "k8s.io/client-go/tools/clientcmd/api") {
				return p
			}
		}
		return ""
	}
	podhost, cluster := deps("cmd/podhost"), deps("cmd/podhost-cluster")
	for _, c := range clusterOnly {
		if p := linked(podhost, c); p != "" {
			t.Errorf("cmd/podhost links %s: it belongs in podhost-cluster (see clusterOnly)", p)
		}
	}
	for _, c := range []string{"k8s.io/client-go/kubernetes", module + "internal/services/cluster", module + "internal/services/kubeletapi"} {
		if linked(cluster, c) == "" {
			t.Errorf("cmd/podhost-cluster does not link %s: is the list above still right?", c)
		}
	}
}
