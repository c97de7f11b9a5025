package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
)

// TopOptions select pods for top (kubectl top pod).
type TopOptions struct {
	Socket        string
	Namespace     string // default "default"
	AllNamespaces bool
	Name          string
	Containers    bool
}

// Top prints NAME CPU(cores) MEMORY(bytes) per pod (POD NAME … per
// container with Containers; NAMESPACE first with -A): CPU is the rate over
// the sampling window in millicores, memory the working set, as
// metrics-server reports them.
func Top(ctx context.Context, o TopOptions, s cmdutil.IOStreams) error {
	ns := o.Namespace
	if o.AllNamespaces {
		ns = ""
	}
	if err := cmdutil.ValidateNames(ns, o.Name); err != nil {
		return err
	}
	c := cmdutil.NewClient(o.Socket, s)
	pms, err := c.Top(ctx, ns)
	if err != nil {
		return err
	}
	var sel []api.PodMetrics
	for _, pm := range pms {
		if o.Name == "" || pm.Name == o.Name {
			sel = append(sel, pm)
		}
	}
	if len(sel) == 0 {
		if o.Name != "" {
			return noMetrics(ctx, c, ns, o.Name)
		}
		return errors.New("metrics not available yet: no running pods")
	}
	return printTop(s.Out, sel, o.AllNamespaces, o.Containers)
}

func printTop(w io.Writer, pms []api.PodMetrics, allNS, containers bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header := []string{"NAME", "CPU(cores)", "MEMORY(bytes)"}
	if containers {
		header = append([]string{"POD"}, header...)
	}
	if allNS {
		header = append([]string{"NAMESPACE"}, header...)
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, pm := range pms {
		prefix := []string{}
		if allNS {
			prefix = append(prefix, pm.Namespace)
		}
		if !containers {
			fmt.Fprintln(tw, strings.Join(append(prefix, pm.Name, cpu(pm.CPUMillis), mem(pm.MemoryBytes)), "\t"))
			continue
		}
		for _, c := range pm.Containers {
			fmt.Fprintln(tw, strings.Join(append(prefix, pm.Name, c.Name, cpu(c.CPUMillis), mem(c.MemoryBytes)), "\t"))
		}
	}
	return tw.Flush()
}

// cpu and mem format as kubectl top: millicores, mebibytes.
func cpu(m int64) string { return fmt.Sprintf("%dm", m) }
func mem(b int64) string { return fmt.Sprintf("%dMi", b/(1<<20)) }

// noMetrics is kubectl top's error for a pod without metrics, the
// metrics API's NotFound; for a pod that exists, podhost says why.
func noMetrics(ctx context.Context, c *api.Client, namespace, name string) error {
	err := fmt.Errorf("Error from server (NotFound): podmetrics.metrics.k8s.io %q not found", namespace+"/"+name) //nolint:staticcheck // kubectl's words
	if _, gerr := c.GetPod(ctx, namespace, name); gerr == nil {
		err = fmt.Errorf("%w (the pod is not running)", err)
	}
	return err
}
