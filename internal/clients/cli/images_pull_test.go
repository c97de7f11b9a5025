package cli

import (
	"strings"
	"testing"

	"github.com/podhost/podhost/internal/host/runtime"
)

func TestProgressLine(t *testing.T) {
	tests := []struct {
		p    runtime.BlobProgress
		want string
	}{
		{runtime.BlobProgress{Digest: "sha256:0123456789abcdef", MediaType: "application/vnd.oci.image.layer.v1.tar+gzip",
			Status: runtime.PullDownloading, Offset: 1000, Total: 2000}, "layer    0123456789ab  downloading 1kB / 2kB"},
		{runtime.BlobProgress{Digest: "sha256:ab", MediaType: "application/vnd.oci.image.config.v1+json",
			Status: runtime.PullDone, Offset: 10, Total: 10}, "config   ab  done        10B"},
		{runtime.BlobProgress{Digest: "sha256:cd", MediaType: "application/vnd.oci.image.index.v1+json",
			Status: runtime.PullWaiting}, "index    cd  waiting     "},
		{runtime.BlobProgress{Digest: "sha256:ef", MediaType: "application/vnd.docker.distribution.manifest.v2+json",
			Status: runtime.PullExists, Total: 5}, "manifest ef  exists      5B"},
	}
	for _, tt := range tests {
		if got := progressLine(tt.p); got != tt.want {
			t.Errorf("progressLine = %q, want %q", got, tt.want)
		}
	}
}

func TestLineProgressPrintsEachBlobOnceWhenComplete(t *testing.T) {
	var b strings.Builder
	l := &lineProgress{out: &b, printed: map[string]bool{}}
	dl := runtime.BlobProgress{Digest: "sha256:aa", Status: runtime.PullDownloading, Offset: 1, Total: 2}
	done := runtime.BlobProgress{Digest: "sha256:aa", Status: runtime.PullDone, Offset: 2, Total: 2}
	l.show([]runtime.BlobProgress{dl})
	l.show([]runtime.BlobProgress{done})
	l.show([]runtime.BlobProgress{done})
	if got := strings.Count(b.String(), "\n"); got != 1 {
		t.Errorf("printed %d lines, want 1: %q", got, b.String())
	}
}
