package config

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
)

const configurationDoc = "../../docs/configuration.md"

// docRow is one row of docs/configuration.md's table.
type docRow struct{ key, flag, def string }

// readDocTable parses the table: | `key` | `--flag` or empty | `default` | meaning |.
func readDocTable(t *testing.T) []docRow {
	t.Helper()
	data, err := os.ReadFile(configurationDoc)
	if err != nil {
		t.Fatal(err)
	}
	var rows []docRow
	for _, line := range strings.Split(string(data), "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) < 4 {
			continue
		}
		unquote := func(s string) string { return strings.Trim(strings.TrimSpace(s), "`") }
		rows = append(rows, docRow{key: unquote(strings.TrimPrefix(cells[0], "|")), flag: strings.TrimPrefix(unquote(cells[1]), "--"), def: unquote(cells[2])})
	}
	return rows
}

// fileKeys: every key of the config file, with the Config value it sets
// (the field of the same name; the embedded file parts map to Disk,
// ManifestURL and Security) and its file type.
type fileKey struct {
	value    reflect.Value
	fileType reflect.Type
}

func fileKeys(c *Config) map[string]fileKey {
	out := map[string]fileKey{}
	var walk func(ft reflect.Type, cv reflect.Value)
	walk = func(ft reflect.Type, cv reflect.Value) {
		for i := range ft.NumField() {
			f := ft.Field(i)
			if f.Anonymous {
				inner := map[string]string{"diskFile": "Disk", "evictionFile": "Eviction", "manifestURLFile": "ManifestURL", "securityFile": "Security"}[f.Name]
				walk(f.Type, cv.FieldByName(inner))
				continue
			}
			key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out[key] = fileKey{value: cv.FieldByName(f.Name), fileType: f.Type}
		}
	}
	walk(reflect.TypeFor[file](), reflect.ValueOf(c).Elem())
	return out
}

// render is a default as the doc writes it.
func render(k fileKey) string {
	v := k.value.Interface()
	if k.fileType == reflect.TypeFor[*resource.Quantity]() {
		return resource.NewQuantity(k.value.Int(), resource.BinarySI).String()
	}
	switch v := v.(type) {
	case time.Duration:
		s := v.String() // 1m0s → 1m, 1h0m0s → 1h
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		return s
	case string:
		if v == "" {
			return `""`
		}
		return v
	case []string:
		return strings.Join(v, ",")
	case ImagePolicy:
		return fmt.Sprintf("{requireSignatures: %v}", v.RequireSignatures)
	case Cluster:
		return fmt.Sprintf("{kubeconfig: %q, nodeName: %q, nodeIP: %q, kubeletPort: %d, kubeletAddress: %q, tlsCertFile: %q, tlsPrivateKeyFile: %q, clientCAFile: %q, clusterDNS: [%s], clusterDomain: %q}",
			v.Kubeconfig, v.NodeName, v.NodeIP, v.KubeletPort, v.KubeletAddress, v.TLSCertFile, v.TLSPrivateKeyFile, v.ClientCAFile, strings.Join(v.ClusterDNS, ", "), v.ClusterDomain)
	case PodSecurity:
		return fmt.Sprintf("{manifestDir: {level: %s}, manifestURL: {level: %s}, cluster: {level: %s}}", v.ManifestDir.Level, v.ManifestURL.Level, v.Cluster.Level)
	}
	if k.value.Kind() == reflect.Map {
		if k.value.Len() == 0 {
			return "{}"
		}
		if m, ok := v.(map[string]string); ok {
			var kv []string
			for _, key := range sortedKeys(m) {
				kv = append(kv, key+": "+m[key])
			}
			return "{" + strings.Join(kv, ", ") + "}"
		}
	}
	return fmt.Sprint(v)
}

// docs/configuration.md's table is every key of the file, with its
// default and its flag.
func TestConfigurationDoc(t *testing.T) {
	rows := readDocTable(t)
	keys := fileKeys(Default())
	var documented []string
	for _, r := range rows {
		documented = append(documented, r.key)
		k, ok := keys[r.key]
		if !ok {
			t.Errorf("docs/configuration.md: %s is no key of the config file", r.key)
			continue
		}
		if got := render(k); got != r.def {
			t.Errorf("docs/configuration.md: %s defaults to %q, the doc says %q", r.key, got, r.def)
		}
	}
	for key := range keys {
		if !slices.Contains(documented, key) {
			t.Errorf("docs/configuration.md lacks the key %s", key)
		}
	}
	checkDocFlags(t, rows)
}

// flagSamples: a value per config flag, as the flag and as the key's YAML.
var flagSamples = map[string][2]string{
	FlagSocket: {"/s", "/s"}, FlagManifestDir: {"/m", "/m"}, FlagStateDir: {"/st", "/st"}, FlagLogDir: {"/l", "/l"},
	FlagRunDir: {"/r", "/r"}, FlagContainerdAddress: {"/c", "/c"}, FlagNamespace: {"ns1", "ns1"}, FlagCNIConfDir: {"/cc", "/cc"},
	FlagCNIBinDir: {"/b1,/b2", "[/b1, /b2]"}, FlagCgroupDriver: {"cgroupfs", "cgroupfs"}, FlagResyncPeriod: {"7s", "7s"},
	FlagSystemReserved: {"cpu=1", "{cpu: '1'}"}, FlagMaxPods: {"7", "7"}, FlagLogDriver: {"/ld", "/ld"},
	FlagMetricsAddress: {"127.0.0.1:1", "127.0.0.1:1"}, FlagKubeAPIAddress: {"127.0.0.1:2", "127.0.0.1:2"},
}

// checkDocFlags: the doc's flags are the config flags, and each sets the
// field its key sets.
func checkDocFlags(t *testing.T, rows []docRow) {
	t.Helper()
	var path string
	bound := Default()
	fs := pflag.NewFlagSet("podhost", pflag.ContinueOnError)
	bound.BindGlobalFlags(fs, &path)
	bound.BindDaemonFlags(fs)
	inDoc := map[string]bool{}
	for _, r := range rows {
		if r.flag == "" {
			continue
		}
		inDoc[r.flag] = true
		sample, ok := flagSamples[r.flag]
		if !ok || fs.Lookup(r.flag) == nil {
			t.Errorf("docs/configuration.md: %s: no config flag --%s", r.key, r.flag)
			continue
		}
		fromFile, err := Parse([]byte(r.key + ": " + sample[1]))
		if err != nil {
			t.Fatalf("%s: %v", r.key, err)
		}
		flags := Default()
		fs := pflag.NewFlagSet("podhost", pflag.ContinueOnError)
		flags.BindGlobalFlags(fs, &path)
		flags.BindDaemonFlags(fs)
		if err := fs.Set(r.flag, sample[0]); err != nil {
			t.Fatalf("--%s: %v", r.flag, err)
		}
		fromFlag := Default()
		fromFlag.MergeFlags(flags, fs)
		fromFlag.scopeByNamespace()
		if !reflect.DeepEqual(fromFile, fromFlag) {
			t.Errorf("docs/configuration.md: --%s does not set what %s sets", r.flag, r.key)
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != FlagConfig && !inDoc[f.Name] {
			t.Errorf("docs/configuration.md: no key lists the flag --%s", f.Name)
		}
	})
}
