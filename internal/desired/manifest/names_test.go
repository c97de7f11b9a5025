package manifest

import (
	"strings"
	"testing"
)

func TestValidateNames(t *testing.T) {
	for _, tt := range []struct {
		ns, name string
		want     string // "" = valid
	}{
		{ns: "default", name: "web"},
		{ns: "infra", name: "web.v2"},
		{ns: "..", name: "web", want: `invalid namespace "..": a lowercase RFC 1123 label must consist of`},
		{ns: "a.b", name: "web", want: `invalid namespace "a.b"`},
		{ns: "", name: "web", want: `invalid namespace ""`},
		{ns: "default", name: "..", want: `invalid pod name "..": a lowercase RFC 1123 subdomain must consist of`},
		{ns: "default", name: "a/b", want: `invalid pod name "a/b"`},
		{ns: "default", name: "Web", want: `invalid pod name "Web"`},
	} {
		err := ValidateNamespace(tt.ns)
		if err == nil {
			err = ValidatePodName(tt.name)
		}
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s/%s: %v", tt.ns, tt.name, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("%s/%s: %v, want %q…", tt.ns, tt.name, err, tt.want)
		}
	}
}
