// Command httpget is wget for the test pods: busybox-static's wget
// segfaults on any name lookup (static glibc loads NSS modules the test
// image does not have), so TestServicesDNS mounts this static Go client,
// whose resolver reads /etc/resolv.conf (nameserver, search, ndots) as
// glibc's does. httpget URL prints the body; an error goes to stderr,
// exit 1.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: httpget URL")
		os.Exit(2)
	}
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(os.Stdout, io.LimitReader(resp.Body, 1<<20)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
