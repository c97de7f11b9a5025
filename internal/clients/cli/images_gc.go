package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/kubelet/imagegc"
)

// ImagesRemove removes the images named by refs.
func ImagesRemove(ctx context.Context, o ImagesOptions, refs []string, s cmdutil.IOStreams) error {
	rt, err := connect(ctx, o)
	if err != nil {
		return err
	}
	defer rt.Close()
	var errs []error
	for _, ref := range refs {
		if err := rt.RemoveImage(ctx, ref); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(s.Out, "removed %s\n", ref)
	}
	return errors.Join(errs...)
}

// ImagesPrune removes every image that no manifest in the manifest
// directory references and no container was created from. It refuses
// while a manifest file has errors: its pods (kept from the last good
// version by the daemon) would not be counted.
func ImagesPrune(ctx context.Context, o ImagesOptions, s cmdutil.IOStreams) error {
	refs, err := manifestImages(o)
	if err != nil {
		return err
	}
	rt, err := connect(ctx, o)
	if err != nil {
		return err
	}
	defer rt.Close()
	pods, err := rt.ListPods(ctx)
	if err != nil {
		return err
	}
	for _, p := range pods {
		for _, c := range p.Containers {
			refs = append(refs, c.Image)
		}
	}
	all, err := rt.ListImages(ctx)
	if err != nil {
		return err
	}
	imgs := imagegc.FromRuntime(all)
	var errs []error
	for _, ref := range imagegc.Unused(imgs, imagegc.Matcher(refs)) {
		if err := rt.RemoveImage(ctx, ref); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(s.Out, "removed %s\n", ref)
	}
	return errors.Join(errs...)
}

// manifestImages lists the images of every pod in the manifest directory.
func manifestImages(o ImagesOptions) ([]string, error) {
	snap, err := source.Scan(o.ManifestDir, o.AllowInsecure)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("manifests: %w", err)
	}
	if len(snap.Errors) > 0 {
		return nil, fmt.Errorf("manifests: %s: %s: refusing to prune (fix the file first)",
			snap.Errors[0].File, snap.Errors[0].Err)
	}
	var out []string
	for _, p := range snap.Pods {
		out = append(out, imagegc.PodImages(p)...)
	}
	return out, nil
}
