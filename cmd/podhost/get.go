package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/podhost/podhost/internal/clients/cli"
	"github.com/podhost/podhost/internal/clients/manifestcmd"
)

func newGetCmd(g *globalOptions) *cobra.Command {
	var opts cli.GetOptions
	var all bool
	cmd := &cobra.Command{
		Use:   "get pods|nodes|configmaps|secrets [NAME...] | TYPE/NAME...",
		Short: "List pods and their status, the node (this machine), or the ConfigMaps and Secrets of the manifest dir (Secret values never shown)",
		Example: "  podhost get pods\n  podhost get pods -l app=web\n  podhost get pods web -o yaml\n  podhost get pods web db\n  podhost get pod/web pod/db\n" +
			"  podhost get pods -o wide\n  podhost get pods -w\n  podhost get pods --show-labels\n  podhost get pods -L app,tier --no-headers\n" +
			"  podhost get pods --sort-by=.status.startTime\n  podhost get pods --sort-by='{.status.containerStatuses[0].restartCount}'\n" +
			"  podhost get pod web -o jsonpath='{.status.podIP}'\n  podhost get pods -o custom-columns=NAME:.metadata.name,IP:.status.podIP\n" +
			"  podhost get nodes -o wide",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(g, &opts.Namespace, typedArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			resource, names, err := cli.ResourceArgs("get", args)
			if err != nil {
				return err
			}
			// Nodes are cluster-scoped: as kubectl, -n and -A are ignored.
			if err := cli.CheckNameArgs(args, opts.Selector, all && resource != "nodes"); err != nil {
				return err
			}
			opts.Socket, opts.Names = cfg.Socket, names
			if all {
				opts.Namespace = "" // every namespace: NAMESPACE first, as kubectl
			}
			if resource == "nodes" {
				return cli.GetNodes(cmd.Context(), opts, g.streams)
			}
			if cli.IsWorkloadResource(resource) {
				return cli.GetWorkloads(cmd.Context(), opts, resource, g.streams)
			}
			if resource != "pods" {
				if opts.Selector != "" {
					return fmt.Errorf("-l: podhost selects pods by label, not %s", resource)
				}
				if err := podsOnlyFlags(cmd, resource); err != nil {
					return err
				}
				return manifestcmd.GetData(manifestcmd.GetDataOptions{Resource: resource, ManifestDir: cfg.ManifestDir, AllowInsecure: cfg.AllowInsecureManifests,
					Namespace: opts.Namespace, Names: names, Output: opts.Output, NoHeaders: opts.NoHeaders}, g.streams)
			}
			return cli.Get(cmd.Context(), opts, g.streams)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "output format: wide, json, yaml, name, jsonpath=TEMPLATE or custom-columns=SPEC")
	cmd.Flags().StringVarP(&opts.Namespace, "namespace", "n", "default", "the namespace of the pods, ConfigMaps and Secrets listed or named")
	cmd.Flags().BoolVarP(&opts.Watch, "watch", "w", false, "after the table, print a line each time a pod's row changes")
	cmd.Flags().StringVarP(&opts.Selector, "selector", "l", "", "label selector, as kubectl's (e.g. -l app=web,tier!=db); pods and nodes")
	cmd.Flags().BoolVar(&opts.ShowLabels, "show-labels", false, "show all labels as the last column of the table (key=value,...); pods and nodes")
	cmd.Flags().StringSliceVarP(&opts.LabelColumns, "label-columns", "L", nil, "a table column per label key, comma-separated or repeated (-L app,tier -L env); pods and nodes")
	cmd.Flags().BoolVar(&opts.NoHeaders, "no-headers", false, "no header line (table, wide and custom-columns output)")
	cmd.Flags().StringVar(&opts.SortBy, "sort-by", "", "sort the list by the field at this JSONPath, as kubectl (e.g. '{.metadata.name}', .status.startTime); pods only")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "pods, ConfigMaps and Secrets of every namespace, NAMESPACE first (not with names, as kubectl)")
	cmd.MarkFlagsMutuallyExclusive("all-namespaces", "namespace")
	return cmd
}

// podsOnlyFlags refuses the printer flags get supports for pods only.
func podsOnlyFlags(cmd *cobra.Command, resource string) error {
	for _, name := range []string{"show-labels", "label-columns", "sort-by"} {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s: podhost supports it for pods, not %s", name, resource)
		}
	}
	return nil
}

func newDescribeCmd(g *globalOptions) *cobra.Command {
	var opts cli.GetOptions
	var showEvents bool
	cmd := &cobra.Command{
		Use:   "describe pods [NAME...|-l SELECTOR] | node|configmap|secret NAME... | TYPE/NAME...",
		Short: "Show a pod's details (containers, states, conditions, events), the node's (this machine), or a ConfigMap or Secret (Secret values never shown)",
		Example: "  podhost describe pod web\n  podhost describe pods web db\n  podhost describe pod/web pod/db --show-events=false\n" +
			"  podhost describe pods\n  podhost describe pods -l app=web\n  podhost describe configmap app\n  podhost describe node",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(g, &opts.Namespace, typedArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			resource, names, err := cli.ResourceArgs("describe", args)
			if err != nil {
				return err
			}
			if resource == "nodes" { // cluster-scoped: -n is ignored; no NAME: the node
				opts.Socket, opts.Names, opts.HideEvents = cfg.Socket, names, !showEvents
				return cli.DescribeNode(cmd.Context(), opts, g.streams)
			}
			if cli.IsWorkloadResource(resource) {
				return fmt.Errorf("describe %s is not supported by podhost yet: 'podhost get %s -o yaml' shows them with their status", resource, resource)
			}
			if resource != "pods" && opts.Selector != "" {
				return fmt.Errorf("-l: podhost selects pods by label, not %s", resource)
			}
			if resource != "pods" && len(names) == 0 {
				return fmt.Errorf("describe %s needs a NAME: podhost describes named %s only ('podhost get %s' lists them)", args[0], resource, resource)
			}
			if resource != "pods" {
				return manifestcmd.DescribeData(manifestcmd.GetDataOptions{Resource: resource, ManifestDir: cfg.ManifestDir,
					AllowInsecure: cfg.AllowInsecureManifests, Namespace: opts.Namespace, Names: names}, g.streams)
			}
			opts.Socket, opts.Names = cfg.Socket, names
			opts.HideEvents = !showEvents
			return cli.Describe(cmd.Context(), opts, g.streams)
		},
	}
	cmd.Flags().StringVarP(&opts.Namespace, "namespace", "n", "default", "the pod's namespace")
	cmd.Flags().StringVarP(&opts.Selector, "selector", "l", "", "describe the pods this label selector matches (e.g. -l app=web), instead of NAMEs")
	cmd.Flags().BoolVar(&showEvents, "show-events", true, "show each described pod's events, as kubectl (--show-events=false: none)")
	return cmd
}

func newLogsCmd(g *globalOptions) *cobra.Command {
	var opts cli.LogsOptions
	cmd := &cobra.Command{
		Use:               "logs NAME|pod/NAME|-l SELECTOR",
		Short:             "Print a container's logs",
		Example:           "  podhost logs web\n  podhost logs pod/web -c sidecar -f\n  podhost logs web --previous --tail 20\n  podhost logs web --since 10m\n  podhost logs web --all-containers --prefix\n  podhost logs -l app=web -f",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeNames(g, &opts.Namespace, podFirstArg),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.config(cmd)
			if err != nil {
				return err
			}
			opts.Socket = cfg.Socket
			if len(args) == 1 {
				opts.Name = args[0]
			}
			opts.TailSet = cmd.Flags().Changed("tail")
			if cmd.Flags().Changed("max-log-requests") && opts.MaxLogRequests < 1 {
				return errors.New("--max-log-requests must be greater than 0")
			}
			return cli.Logs(cmd.Context(), opts, g.streams)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Namespace, "namespace", "n", "default", "the pod's namespace")
	f.StringVarP(&opts.Selector, "selector", "l", "", "logs of the pods this label selector matches (e.g. app=web), instead of NAME; --tail defaults to 10")
	f.BoolVar(&opts.AllContainers, "all-containers", false, "logs of every container of the pod(s): init containers first")
	f.BoolVar(&opts.Prefix, "prefix", false, "prefix each line with its source: [pod/NAME/CONTAINER]")
	f.IntVar(&opts.MaxLogRequests, "max-log-requests", 5, "with -f, the most log streams followed at once")
	f.StringVarP(&opts.Container, "container", "c", "", "container name (default: the kubectl.kubernetes.io/default-container annotation's, else the first)")
	f.BoolVarP(&opts.Follow, "follow", "f", false, "keep streaming new output")
	f.BoolVarP(&opts.Previous, "previous", "p", false, "the previous (terminated) instance of the container")
	f.IntVar(&opts.Tail, "tail", -1, "lines from the end to show (-1: all)")
	f.BoolVar(&opts.Timestamps, "timestamps", false, "prefix each line with its RFC3339Nano timestamp")
	f.DurationVar(&opts.Since, "since", 0, "only lines newer than this duration (e.g. 5s, 2m, 3h)")
	f.StringVar(&opts.SinceTime, "since-time", "", "only lines after this RFC3339 time")
	return cmd
}
