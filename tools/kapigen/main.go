// Command kapigen generates what podhost's Kubernetes API serves about its
// own schema, from the same code kube-apiserver runs: it installs the
// served table (served.go) on stub storages in a generic API server
// (k8s.io/apiserver, which podhost itself does not link), asks it for its
// OpenAPI documents and derives the structured-merge-diff schema of
// server-side apply from them. Run by generate.sh (make generate-kubeapi);
// the output is committed in internal/services/kubeapi/openapi:
//
//	v3.json.gz                  GET /openapi/v3 (the index: path → URL?hash=SHA-512)
//	v3/<path>.json.gz           GET /openapi/v3/<path>: api/v1, apis/events.k8s.io/v1, ...
//	v2.json.gz, v2.pb.gz        GET /openapi/v2 as JSON and as protobuf
//	smd-schema.yaml.gz          the schema server-side apply merges with
//	SHA512SUMS                  SHA-512 of each uncompressed file (the ETags)
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"k8s.io/klog/v2"
)

func main() {
	out := flag.String("out", "", "output directory (internal/services/kubeapi/openapi)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: kapigen -out DIR")
		os.Exit(2)
	}
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "kapigen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	klog.SetOutput(io.Discard) // the generic server's start-up chatter
	klog.LogToStderr(false)
	version, err := kubeVersion()
	if err != nil {
		return err
	}
	srv, err := newServer(version)
	if err != nil {
		return err
	}
	srv.PrepareRun() // installs /openapi/v2 and /openapi/v3
	docs, v3, err := fetch(srv.Handler.Director)
	if err != nil {
		return err
	}
	if err := check(v3); err != nil {
		return err
	}
	roots, err := writtenTypes()
	if err != nil {
		return err
	}
	if docs["smd-schema.yaml"], err = smdSchema(v3, roots); err != nil {
		return err
	}
	return write(out, docs)
}

// kubeVersion: the Kubernetes release of the k8s.io/api the documents
// describe (v0.37.2 → v1.37.2), the documents' info.version.
func kubeVersion() (string, error) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", fmt.Errorf("no build info")
	}
	for _, d := range bi.Deps {
		if d.Path == "k8s.io/api" {
			if v, ok := strings.CutPrefix(d.Version, "v0."); ok {
				return "v1." + v, nil
			}
			return "", fmt.Errorf("k8s.io/api %s: not a v0.x release", d.Version)
		}
	}
	return "", fmt.Errorf("k8s.io/api is not linked")
}
