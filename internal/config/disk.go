package config

import (
	"errors"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Disk defaults (see docs/appliance.md, "Disk").
const (
	DefaultImageFSPath                 = "/var/lib/containerd"
	DefaultImageGCHighThresholdPercent = 85
	DefaultImageGCLowThresholdPercent  = 80
)

// Disk bounds what podhost keeps on disk.
type Disk struct {
	// LogDirMaxSize caps the whole log directory in bytes, enforced oldest
	// file first (never a container's live file); 0 = off. Key logDirMaxSize.
	LogDirMaxSize int64
	// ImageFSPath is a path on the filesystem holding containerd's content
	// store and snapshots (its root). Key imageFSPath.
	ImageFSPath string
	// ImageGCHighThresholdPercent: image GC starts when the image
	// filesystem's usage reaches it (100 = image GC off); it removes unused
	// images, least recently used first, down to ImageGCLowThresholdPercent.
	ImageGCHighThresholdPercent int
	ImageGCLowThresholdPercent  int
}

func defaultDisk() Disk {
	return Disk{
		ImageFSPath:                 DefaultImageFSPath,
		ImageGCHighThresholdPercent: DefaultImageGCHighThresholdPercent,
		ImageGCLowThresholdPercent:  DefaultImageGCLowThresholdPercent,
	}
}

// diskFile is Disk's on-disk form (inlined in file).
type diskFile struct {
	LogDirMaxSize               *resource.Quantity `json:"logDirMaxSize"`
	ImageFSPath                 *string            `json:"imageFSPath"`
	ImageGCHighThresholdPercent *int               `json:"imageGCHighThresholdPercent"`
	ImageGCLowThresholdPercent  *int               `json:"imageGCLowThresholdPercent"`
}

func (f *diskFile) applyTo(d *Disk) {
	if f.LogDirMaxSize != nil {
		d.LogDirMaxSize = f.LogDirMaxSize.Value()
	}
	setString(&d.ImageFSPath, f.ImageFSPath)
	if f.ImageGCHighThresholdPercent != nil {
		d.ImageGCHighThresholdPercent = *f.ImageGCHighThresholdPercent
	}
	if f.ImageGCLowThresholdPercent != nil {
		d.ImageGCLowThresholdPercent = *f.ImageGCLowThresholdPercent
	}
}

func (d *Disk) validate() error {
	var errs []error
	if d.LogDirMaxSize < 0 {
		errs = append(errs, fmt.Errorf("logDirMaxSize: must not be negative, got %d", d.LogDirMaxSize))
	}
	if !filepath.IsAbs(d.ImageFSPath) {
		errs = append(errs, fmt.Errorf("imageFSPath: must be an absolute path, got %q", d.ImageFSPath))
	}
	hi, lo := d.ImageGCHighThresholdPercent, d.ImageGCLowThresholdPercent
	if hi < 0 || hi > 100 {
		errs = append(errs, fmt.Errorf("imageGCHighThresholdPercent: must be in [0, 100], got %d", hi))
	}
	if lo < 0 || lo > 100 {
		errs = append(errs, fmt.Errorf("imageGCLowThresholdPercent: must be in [0, 100], got %d", lo))
	}
	if lo > hi {
		errs = append(errs, errors.New("imageGCLowThresholdPercent: must not exceed imageGCHighThresholdPercent"))
	}
	return errors.Join(errs...)
}
