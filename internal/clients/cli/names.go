package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/podhost/podhost/internal/clients/cmdutil"
)

// ResourceArgs parses the arguments of get and describe (cmd is the
// command's name, for the error) as kubectl's resource builder does: TYPE
// [NAME...], or TYPE/NAME... with every argument in that form. The type is
// one podhost serves, returned as "pods", "nodes", "configmaps" or
// "secrets"; the
// names are in order, repeats kept (kubectl prints such an object again).
// Unlike kubectl, podhost takes one type per command (pod/web configmap/app
// is refused).
func ResourceArgs(cmd string, args []string) (string, []string, error) {
	if len(args) == 0 {
		return "", nil, fmt.Errorf("you must specify the type of resource to %s: pods, nodes, configmaps or secrets", cmd)
	}
	slashed := 0
	for _, a := range args {
		if strings.Contains(a, "/") {
			slashed++
		}
	}
	switch {
	case slashed == 0:
		r, err := resourceType(args[0])
		return r, args[1:], err
	case slashed < len(args):
		return "", nil, fmt.Errorf("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form "+
			"(e.g. 'podhost %s resource/<resource_name>' instead of 'podhost %s resource resource/<resource_name>')", cmd, cmd)
	}
	resource, names := "", make([]string, 0, len(args))
	for _, a := range args {
		typ, name, err := splitTypeName(a)
		if err != nil {
			return "", nil, err
		}
		r, err := resourceType(typ)
		if err != nil {
			return "", nil, err
		}
		if resource != "" && r != resource {
			return "", nil, fmt.Errorf("%s and %s: podhost %s takes one resource type at a time", args[0], a, cmd)
		}
		resource, names = r, append(names, name)
	}
	return resource, names, nil
}

// errNameAndSelector is kubectl's refusal of names with a label selector.
var errNameAndSelector = errors.New("name cannot be provided when a selector is specified")

// CheckNameArgs refuses what kubectl's resource builder refuses with names
// among get's args (as given to ResourceArgs): a label selector (it does
// not narrow the names: kubectl's error, not a NotFound for a pod that
// exists), or -A (podhost looks for names in every namespace without -n;
// with -A it says what kubectl says).
func CheckNameArgs(args []string, selector string, allNamespaces bool) error {
	typeName := len(args) > 0 && strings.Contains(args[0], "/")
	if !typeName && len(args) < 2 {
		return nil
	}
	switch {
	case strings.TrimSpace(selector) != "" && typeName:
		return errors.New("selectors and the all flag cannot be used when passing resource/name arguments")
	case strings.TrimSpace(selector) != "":
		return errNameAndSelector
	case allNamespaces:
		return errors.New("a resource cannot be retrieved by name across all namespaces")
	}
	return nil
}

// splitTypeName splits "pod/web" into its type and name ("pod", "web"),
// with the errors of kubectl's resource builder; the type is as typed.
func splitTypeName(arg string) (string, string, error) {
	seg := strings.Split(arg, "/")
	if len(seg) != 2 {
		return "", "", errors.New("arguments in resource/name form may not have more than one slash")
	}
	if seg[0] == "" || seg[1] == "" {
		return "", "", errors.New("arguments in resource/name form must have a single resource and name")
	}
	return seg[0], seg[1], nil
}

// resourceType maps the words kubectl users type for the types get and
// describe serve to "pods", "nodes", "configmaps" or "secrets".
func resourceType(word string) (string, error) {
	if r := cmdutil.DataResource(word); r != "" {
		return r, nil
	}
	if CheckResource(strings.ToLower(word)) == nil {
		return "pods", nil
	}
	switch strings.ToLower(word) {
	case "nodes", "node", "no":
		return "nodes", nil
	}
	if r := workloadResource(word); r != "" {
		return r, nil
	}
	return "", fmt.Errorf("the server doesn't have a resource type %q (podhost serves pods, nodes, configmaps, secrets, deployments, replicasets, statefulsets, daemonsets, jobs and cronjobs)", word)
}

// podArg is the pod name of a NAME or pod/NAME argument (logs, exec,
// rollout): kubectl takes TYPE/NAME there too, with the resource builder's
// errors (pod/, pods/web/x); the type must be pods, pod or po.
func podArg(arg string) (string, error) {
	if !strings.Contains(arg, "/") {
		return arg, nil
	}
	typ, name, err := splitTypeName(arg)
	if err != nil {
		return "", err
	}
	if cmdutil.DataResource(typ) != "" {
		return "", fmt.Errorf("%s is not a pod: podhost takes NAME or pod/NAME here", arg)
	}
	if err := CheckResource(strings.ToLower(typ)); err != nil {
		return "", err
	}
	return name, nil
}
