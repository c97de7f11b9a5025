package manifest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// scalarAliasBomb returns a pod of about size bytes: one annotation holds
// half of it, and the rest is a list of aliases to that annotation. Every
// alias is one node for go-yaml's alias ratio check, but the whole scalar
// once expanded: a 124 KB file is about 400 MB of strings.
func scalarAliasBomb(size int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  annotations:\n    a: &a \"")
	b.WriteString(strings.Repeat("x", size/2))
	b.WriteString("\"\nspec:\n  containers:\n  - name: c\n    image: i:1\n    args:\n")
	for b.Len() < size {
		b.WriteString("    - *a\n")
	}
	return []byte(b.String())
}

// TestScalarAliasBombIsRefusedCheaply: the expanded-bytes budget refuses
// an alias bomb before anything copies the expansion. Before it, the
// 124 KB document took 4.3 GB of allocations and 48 s to decode on the
// machine of issue 31, and the 1 MiB one OOM-killed the daemon. The limits
// here are far above what the refusal takes (a few ms, a few MB).
func TestScalarAliasBombIsRefusedCheaply(t *testing.T) {
	for _, size := range []int{124 << 10, MaxFileSize - 64} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			data := scalarAliasBomb(size)
			alloc, elapsed, err := measureDecode(data)
			want := fmt.Sprintf("bomb.yaml: document too large: more than %d bytes after expanding YAML aliases", min(max(expandFactor*len(data), minExpanded), maxExpanded))
			if got := errString(err); !strings.HasPrefix(got, want) {
				t.Errorf("got  %s\nwant %s…", got, want)
			}
			t.Logf("%d-byte alias bomb refused in %v, %.1f MB allocated", len(data), elapsed, float64(alloc)/(1<<20))
			if elapsed > time.Second {
				t.Errorf("took %v, want < 1s", elapsed)
			}
			if alloc > 50<<20 {
				t.Errorf("allocated %d MB, want < 50 MB", alloc>>20)
			}
		})
	}
}

// measureDecode decodes data and returns the bytes allocated meanwhile (an
// upper bound of the extra memory it needed) and the time it took.
func measureDecode(data []byte) (uint64, time.Duration, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := DecodeObjects("bomb.yaml", data)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, elapsed, err
}

// TestAliasesWithinBudget: anchors reused across containers, the common
// use of aliases in a manifest, are well within the budget even in a small
// file; so is a 1 MiB file without aliases.
func TestAliasesWithinBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n")
	for i := range 20 {
		if i == 0 {
			fmt.Fprintf(&b, "  - name: c0\n    image: i:1\n    env: &env\n")
			for j := range 50 {
				fmt.Fprintf(&b, "    - name: VAR_%d\n      value: %q\n", j, strings.Repeat("v", 100))
			}
			continue
		}
		fmt.Fprintf(&b, "  - name: c%d\n    image: i:1\n    env: *env\n", i)
	}
	pods, err := Decode("web.yaml", []byte(b.String()))
	if err != nil || len(pods) != 1 || len(pods[0].Spec.Containers[19].Env) != 50 {
		t.Fatalf("anchored env: %v", err)
	}

	big := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  a: " + strings.Repeat("x", MaxFileSize-100) + "\n"
	if _, err := DecodeObjects("big.yaml", []byte(big)); err != nil {
		t.Fatalf("1 MiB ConfigMap without aliases: %v", err)
	}
}

// BenchmarkScalarAliasBomb: what refusing the 1 MiB alias bomb costs.
//
//	go test -run='^$' -bench=ScalarAliasBomb -benchmem ./internal/desired/manifest
func BenchmarkScalarAliasBomb(b *testing.B) {
	data := scalarAliasBomb(MaxFileSize - 64)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeObjects("bomb.yaml", data); err == nil {
			b.Fatal("alias bomb accepted")
		}
	}
}
