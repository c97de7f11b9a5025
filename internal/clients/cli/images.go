package cli

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/docker/go-units"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/host/runtime"
)

// ImagesOptions address containerd for the images commands, which talk to
// containerd directly (they work with the daemon down).
type ImagesOptions struct {
	Address, Namespace string
	File               string // import: path or "-"
	// prune: the manifest directory whose images stay.
	ManifestDir   string
	AllowInsecure bool
}

// ImagesImport imports an OCI layout or docker save archive and unpacks it.
func ImagesImport(ctx context.Context, o ImagesOptions, s cmdutil.IOStreams) error {
	r := s.In
	if o.File != "-" {
		f, err := os.Open(o.File)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	rt, err := connect(ctx, o)
	if err != nil {
		return err
	}
	defer rt.Close()
	imgs, err := rt.ImportImage(ctx, r)
	if err != nil {
		return fmt.Errorf("import %s: %w", o.File, err)
	}
	for _, img := range imgs {
		fmt.Fprintf(s.Out, "imported %s (%s)\n", img.Ref, img.Digest)
	}
	return nil
}

// ImagesList prints REF DIGEST SIZE PINNED: PINNED says where a pinned
// image came from (images-dir:<file>), which image GC never removes.
func ImagesList(ctx context.Context, o ImagesOptions, s cmdutil.IOStreams) error {
	rt, err := connect(ctx, o)
	if err != nil {
		return err
	}
	defer rt.Close()
	imgs, err := rt.ListImages(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(s.Out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "REF\tDIGEST\tSIZE\tPINNED")
	for _, img := range imgs {
		pinned := img.Pinned
		if pinned == "" {
			pinned = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", img.Ref, img.Digest, units.HumanSize(float64(img.Size)), pinned)
	}
	return tw.Flush()
}

// connect gives up after 10 s: a CLI must not hang on a missing containerd.
func connect(ctx context.Context, o ImagesOptions) (*runtime.Runtime, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rt, err := runtime.Connect(cctx, o.Address, o.Namespace, runtime.Options{})
	if err != nil {
		return nil, fmt.Errorf("containerd at %s: %w", o.Address, err)
	}
	return rt, nil
}
