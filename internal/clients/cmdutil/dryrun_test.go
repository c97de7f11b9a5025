package cmdutil

import "testing"

// kubectl's values (none, client, server), its deprecated forms with their
// warnings, and its error for anything else.
func TestParseDryRun(t *testing.T) {
	for _, c := range []struct {
		in     string
		want   DryRun
		warns  bool
		suffix string
	}{
		{"none", DryRunNone, false, ""},
		{"client", DryRunClient, false, " (dry run)"},
		{"server", DryRunServer, false, " (server dry run)"},
		{dryRunBare, DryRunClient, true, " (dry run)"},
		{"true", DryRunClient, true, " (dry run)"},
		{"false", DryRunNone, true, ""},
	} {
		got, warn, err := ParseDryRun(c.in)
		if err != nil || got != c.want || (warn != "") != c.warns || got.Suffix() != c.suffix {
			t.Errorf("ParseDryRun(%q) = %v, %q, %v; want %v, warning %v, suffix %q", c.in, got, warn, err, c.want, c.warns, c.suffix)
		}
	}
	if _, _, err := ParseDryRun("maybe"); err == nil || err.Error() != `Invalid dry-run value (maybe). Must be "none", "server", or "client".` {
		t.Errorf("ParseDryRun(maybe) = %v", err)
	}
}
