package manifest

import (
	"strings"
	"testing"
)

// Labels and annotations are checked as the API server checks them
// (apimachinery's ValidateLabels and ValidateAnnotations), for pods,
// ConfigMaps and Secrets: one line naming the file and the field.
func TestLabelsAndAnnotations(t *testing.T) {
	pod := func(meta string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n" + meta + "spec:\n  containers:\n  - name: c\n    image: busybox\n"
	}
	cm := func(meta string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n" + meta + "data:\n  k: v\n"
	}
	big := strings.Repeat("x", 128<<10)
	for _, tc := range []struct{ doc, want string }{
		{pod("  labels:\n    \"bad key\": x\n"), `web.yaml: metadata.labels: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{pod("  labels:\n    app: \"two words\"\n"), `web.yaml: metadata.labels: Invalid value: "two words": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		{pod("  labels:\n    app: " + strings.Repeat("a", 64) + "\n"), `web.yaml: metadata.labels: Invalid value: "` + strings.Repeat("a", 64) + `": must be no more than 63 bytes`},
		{pod("  annotations:\n    \"a/b/c\": x\n"), `web.yaml: metadata.annotations: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`},
		{pod("  annotations:\n    a: " + big + "\n    b: " + big + "\n"), `web.yaml: metadata.annotations: Too long: may not be more than 262144 bytes`},
		{cm("  labels:\n    \"-x\": z\n"), `web.yaml: metadata.labels: Invalid value: "-x": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
	} {
		_, err := DecodeObjects("web.yaml", []byte(tc.doc))
		if got := errString(err); got != tc.want {
			t.Errorf("got  %.300s\nwant %.300s", got, tc.want)
		}
		assertOneLinePerError(t, err)
	}
	if _, err := DecodeObjects("web.yaml", []byte(pod("  labels:\n    app.kubernetes.io/name: web\n    tier: \"\"\n  annotations:\n    Example.COM/Key: \"any value: at all\"\n"))); err != nil {
		t.Errorf("valid labels and annotations refused: %v", err)
	}
}
