package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/docker/go-units"
	"golang.org/x/term"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/host/runtime"
)

// ImagesPull pulls ref and unpacks it. On a terminal, every blob's bytes
// are shown and redrawn as they arrive (as ctr pull does); otherwise one
// line per blob when it completes.
func ImagesPull(ctx context.Context, o ImagesOptions, ref string, s cmdutil.IOStreams) error {
	rt, err := connect(ctx, o)
	if err != nil {
		return err
	}
	defer rt.Close()
	var show func([]runtime.BlobProgress)
	if isTerminal(s.Out) {
		show = (&liveProgress{out: s.Out}).show
	} else {
		show = (&lineProgress{out: s.Out, printed: map[string]bool{}}).show
	}
	img, err := rt.PullImage(ctx, ref, show)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "pulled %s (%s, %s)\n", img.Ref, img.Digest, units.HumanSize(float64(img.Size)))
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// blobKind names a blob by its media type: manifest, index, config or layer.
func blobKind(mediaType string) string {
	switch {
	case strings.Contains(mediaType, "index") || strings.Contains(mediaType, "manifest.list"):
		return "index"
	case strings.Contains(mediaType, "manifest"):
		return "manifest"
	case strings.Contains(mediaType, "config"):
		return "config"
	default:
		return "layer"
	}
}

// shortDigest is the first 12 hex digits of a digest.
func shortDigest(d string) string {
	_, hex, _ := strings.Cut(d, ":")
	if len(hex) > 12 {
		return hex[:12]
	}
	return hex
}

// progressLine formats one blob: kind, digest, status, bytes.
func progressLine(p runtime.BlobProgress) string {
	return fmt.Sprintf("%-8s %s  %-11s %s", blobKind(p.MediaType), shortDigest(p.Digest), p.Status, progressBytes(p))
}

func progressBytes(p runtime.BlobProgress) string {
	switch p.Status {
	case runtime.PullDownloading:
		return fmt.Sprintf("%s / %s", units.HumanSize(float64(p.Offset)), units.HumanSize(float64(p.Total)))
	case runtime.PullDone, runtime.PullExists:
		return units.HumanSize(float64(p.Total))
	default:
		return ""
	}
}

// liveProgress redraws the whole table in place (ANSI cursor up, clear line).
type liveProgress struct {
	out   io.Writer
	lines int
}

func (l *liveProgress) show(ps []runtime.BlobProgress) {
	var b strings.Builder
	if l.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", l.lines)
	}
	for _, p := range ps {
		b.WriteString("\r\x1b[K" + progressLine(p) + "\n")
	}
	l.lines = len(ps)
	_, _ = io.WriteString(l.out, b.String()) // a closed terminal ends the display, not the pull
}

// lineProgress prints a blob once, when it completes.
type lineProgress struct {
	out     io.Writer
	printed map[string]bool
}

func (l *lineProgress) show(ps []runtime.BlobProgress) {
	for _, p := range ps {
		if l.printed[p.Digest] || (p.Status != runtime.PullDone && p.Status != runtime.PullExists) {
			continue
		}
		l.printed[p.Digest] = true
		fmt.Fprintln(l.out, progressLine(p))
	}
}
