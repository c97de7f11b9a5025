//go:build integration

// Command mkimage writes podhost's offline test image (podhost.test/busybox:1,
// an OCI image layout tarball built from busybox-static) to a file:
//
//	go run -tags integration ./internal/testenv/cmd/mkimage -o busybox.tar
//
// It reuses the cached build in $PODHOST_CACHE_DIR/images when there is one.
// Import the result with `podhost images import busybox.tar` or
// `ctr -n podhost images import busybox.tar`.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/podhost/podhost/internal/testenv"
)

func main() {
	out := flag.String("o", "", "output file (default: print the cached image's path)")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	tarPath, ref, err := testenv.BuildImage(filepath.Join(testenv.CacheDir(), "images"))
	if err != nil {
		return err
	}
	if out == "" {
		fmt.Println(tarPath)
		return nil
	}
	src, err := os.Open(tarPath)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := out + ".tmp"
	dst, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		os.Remove(tmp)
		return err
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "mkimage: wrote %s (%s)\n", out, ref)
	return nil
}
