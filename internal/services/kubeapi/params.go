package kubeapi

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
)

// The query parameters of the pod subresources, read as the API server
// reads them (k8s.io/kubernetes pkg/apis/core/v1's generated
// Convert_url_Values_To_v1_Pod*Options, which k8s.io/api does not ship).
func init() {
	must(scheme.AddConversionFunc((*url.Values)(nil), (*corev1.PodLogOptions)(nil), func(a, b any, _ conversion.Scope) error {
		q, o := *a.(*url.Values), b.(*corev1.PodLogOptions)
		var err error
		o.Container = q.Get("container")
		o.Follow, err = boolParam(q, "follow", err)
		o.Previous, err = boolParam(q, "previous", err)
		o.Timestamps, err = boolParam(q, "timestamps", err)
		o.InsecureSkipTLSVerifyBackend, err = boolParam(q, "insecureSkipTLSVerifyBackend", err)
		o.SinceSeconds, err = intParam(q, "sinceSeconds", err)
		o.TailLines, err = intParam(q, "tailLines", err)
		o.LimitBytes, err = intParam(q, "limitBytes", err)
		if v := q.Get("sinceTime"); v != "" && err == nil {
			var t time.Time
			if t, err = time.Parse(time.RFC3339, v); err == nil {
				mt := metav1.NewTime(t)
				o.SinceTime = &mt
			}
		}
		if v := q.Get("stream"); v != "" {
			s := v
			o.Stream = &s
		}
		return err
	}))
	must(scheme.AddConversionFunc((*url.Values)(nil), (*corev1.PodExecOptions)(nil), func(a, b any, _ conversion.Scope) error {
		q, o := *a.(*url.Values), b.(*corev1.PodExecOptions)
		var err error
		o.Stdin, err = boolParam(q, "stdin", err)
		o.Stdout, err = boolParam(q, "stdout", err)
		o.Stderr, err = boolParam(q, "stderr", err)
		o.TTY, err = boolParam(q, "tty", err)
		o.Container, o.Command = q.Get("container"), q["command"]
		return err
	}))
	must(scheme.AddConversionFunc((*url.Values)(nil), (*corev1.PodAttachOptions)(nil), func(a, b any, _ conversion.Scope) error {
		q, o := *a.(*url.Values), b.(*corev1.PodAttachOptions)
		var err error
		o.Stdin, err = boolParam(q, "stdin", err)
		o.Stdout, err = boolParam(q, "stdout", err)
		o.Stderr, err = boolParam(q, "stderr", err)
		o.TTY, err = boolParam(q, "tty", err)
		o.Container = q.Get("container")
		return err
	}))
	must(scheme.AddConversionFunc((*url.Values)(nil), (*corev1.PodPortForwardOptions)(nil), func(a, b any, _ conversion.Scope) error {
		q, o := *a.(*url.Values), b.(*corev1.PodPortForwardOptions)
		for _, p := range q["ports"] {
			n, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				return fmt.Errorf("ports: %w", err)
			}
			o.Ports = append(o.Ports, int32(n))
		}
		return nil
	}))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// boolParam reads an optional boolean query parameter (err: an earlier
// one's, passed along).
func boolParam(q url.Values, name string, err error) (bool, error) {
	v := q.Get(name)
	if err != nil || v == "" {
		return false, err
	}
	b, perr := strconv.ParseBool(v)
	if perr != nil {
		return false, fmt.Errorf("%s: %w", name, perr)
	}
	return b, nil
}

func intParam(q url.Values, name string, err error) (*int64, error) {
	v := q.Get(name)
	if err != nil || v == "" {
		return nil, err
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		return nil, fmt.Errorf("%s: %w", name, perr)
	}
	return &n, nil
}
