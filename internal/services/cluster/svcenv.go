package cluster

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
	"github.com/podhost/podhost/internal/services/clusterdns"
)

// The Kubernetes service variables of a pod from the API server, as the
// kubelet makes them (getServiceEnvVarMap): the `kubernetes` Service of
// the default namespace always, and with enableServiceLinks (the default)
// every Service of the pod's namespace (one of that name there wins), each
// with a cluster IP. They come from the cluster's Services, not podhost's
// own, and reach the daemon as a ConfigMap in the pod's file
// (wellknown.ServiceEnvConfigMap), which it reads when a container
// starts, as the kubelet reads its Service lister.

// svcPass holds the Services read during one reconcile, by namespace
// (and "default/kubernetes"): one list per namespace per pass, nothing
// kept between passes.
type svcPass map[string][]*corev1.Service

const masterServiceKey = "\x00default/kubernetes"

// services returns the Services of namespace (list) or the master
// Service (get), read once per pass.
func (m *mirrors) services(ctx context.Context, pass svcPass, key string) ([]*corev1.Service, error) {
	if s, ok := pass[key]; ok {
		return s, nil
	}
	var out []*corev1.Service
	if key == masterServiceKey {
		s, err := m.a.client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the kubernetes Service: %w", err)
		}
		if err == nil {
			out = append(out, s)
		}
	} else {
		l, err := m.a.client.CoreV1().Services(key).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("the Services of namespace %s: %w", key, err)
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	pass[key] = out
	return out, nil
}

// serviceEnvConfigMap is p's service variables as the ConfigMap the
// daemon reads them from.
func (m *mirrors) serviceEnvConfigMap(ctx context.Context, pass svcPass, p *corev1.Pod) (*corev1.ConfigMap, error) {
	byName := map[string]*corev1.Service{}
	master, err := m.services(ctx, pass, masterServiceKey)
	if err != nil {
		return nil, err
	}
	for _, s := range master {
		byName[s.Name] = s
	}
	if links := p.Spec.EnableServiceLinks; links == nil || *links {
		mine, err := m.services(ctx, pass, p.Namespace)
		if err != nil {
			return nil, err
		}
		for _, s := range mine {
			byName[s.Name] = s
		}
	}
	list := make([]*corev1.Service, 0, len(byName))
	for _, s := range byName {
		list = append(list, s)
	}
	data := map[string]string{}
	for _, e := range clusterdns.FromServices(list, clusterIP) {
		data[e.Name] = e.Value
	}
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: wellknown.ServiceEnvConfigMap(string(p.UID)), Namespace: p.Namespace}, Data: data}, nil
}

// clusterIP is a Service's cluster IP; invalid for a headless one.
func clusterIP(s *corev1.Service) netip.Addr {
	ip, err := netip.ParseAddr(s.Spec.ClusterIP)
	if err != nil {
		return netip.Addr{}
	}
	return ip
}
