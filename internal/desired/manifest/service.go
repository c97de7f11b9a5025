package manifest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kinds a manifest may hold for Services between pods.
const (
	KindService        = "Service"
	KindServiceAccount = "ServiceAccount"
)

// MaxServicePorts bounds the ports of one Service (the DNS answers and the
// endpoint index are per port).
const MaxServicePorts = 100

var (
	serviceType        = reflect.TypeFor[corev1.Service]()
	serviceAccountType = reflect.TypeFor[corev1.ServiceAccount]()
)

// refuseService is the refusal of a Service field podhost cannot honour.
func refuseService(p *field.Path, why string) *field.Error {
	return field.Forbidden(p, p.String()+" is "+notSupported+" ("+why+")")
}

// decodeService decodes and validates a Service: a virtual IP podhost
// picks, or headless (clusterIP None); what needs a node port, a load
// balancer or a chosen address is refused.
func decodeService(obj map[string]any) (*corev1.Service, errs) {
	var e errs
	if checkSchema(obj, serviceType, nil, &e); len(e) > 0 {
		return nil, e
	}
	svc := &corev1.Service{}
	if err := decodeCanonical(obj, svc); err != nil {
		e.add("", "decode Service: %s", err)
		return nil, e
	}
	svc.Status = corev1.ServiceStatus{}
	if svc.Namespace == "" {
		svc.Namespace = defaultNamespace
	}
	all := validateServiceMeta(&svc.ObjectMeta)
	all = append(all, validateServiceSpec(&svc.Spec, field.NewPath("spec"))...)
	e.addField(all)
	return svc, e
}

// validateServiceMeta: a Service's name is a DNS-1035 label (the API
// server's rule: it becomes a DNS name).
func validateServiceMeta(m *metav1.ObjectMeta) field.ErrorList {
	p := field.NewPath("metadata")
	var all field.ErrorList
	if m.Name == "" {
		all = append(all, field.Required(p.Child("name"), "name is required"))
	}
	for _, msg := range validation.IsDNS1035Label(m.Name) {
		if m.Name != "" {
			all = append(all, field.Invalid(p.Child("name"), m.Name, msg))
		}
	}
	for _, msg := range validation.IsDNS1123Label(m.Namespace) {
		all = append(all, field.Invalid(p.Child("namespace"), m.Namespace, msg))
	}
	return append(all, validateLabelsAndAnnotations(m, p)...)
}

func validateServiceSpec(s *corev1.ServiceSpec, p *field.Path) field.ErrorList {
	all := validateServiceType(s, p)
	for k, v := range s.Selector {
		for _, msg := range validation.IsQualifiedName(k) {
			all = append(all, field.Invalid(p.Child("selector"), k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			all = append(all, field.Invalid(p.Child("selector").Key(k), v, msg))
		}
	}
	if len(s.Ports) > MaxServicePorts {
		all = append(all, field.TooMany(p.Child("ports"), len(s.Ports), MaxServicePorts))
		return all
	}
	names := map[string]bool{}
	headless := s.ClusterIP == corev1.ClusterIPNone
	for i := range s.Ports {
		all = append(all, validateServicePort(&s.Ports[i], len(s.Ports) > 1, headless, names, p.Child("ports").Index(i))...)
	}
	return all
}

// validateServiceType refuses what needs a virtual IP, a node port, a load
// balancer or another address family.
func validateServiceType(s *corev1.ServiceSpec, p *field.Path) field.ErrorList {
	var all field.ErrorList
	switch s.Type {
	case "", corev1.ServiceTypeClusterIP:
	case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName:
		all = append(all, refuseService(p.Child("type"), fmt.Sprintf("%s: no node ports or load balancers on one machine; use a pod's hostPort", s.Type)))
	default:
		all = append(all, field.NotSupported(p.Child("type"), s.Type, []string{string(corev1.ServiceTypeClusterIP)}))
	}
	if s.ClusterIP != "" && s.ClusterIP != corev1.ClusterIPNone {
		all = append(all, refuseService(p.Child("clusterIP"), "podhost picks the virtual IP from its serviceCIDR; leave it unset, or None for a headless Service"))
	}
	for i, ip := range s.ClusterIPs {
		if ip != corev1.ClusterIPNone {
			all = append(all, refuseService(p.Child("clusterIPs").Index(i), "podhost picks the virtual IP; leave it unset or None"))
		}
	}
	refuse := func(set bool, name, why string) {
		if set {
			all = append(all, refuseService(p.Child(name), why))
		}
	}
	refuse(len(s.ExternalIPs) > 0, "externalIPs", "no virtual IPs")
	refuse(s.ExternalName != "", "externalName", "type ExternalName is not supported")
	refuse(s.SessionAffinity == corev1.ServiceAffinityClientIP, "sessionAffinity", "no virtual IP to keep a client on one pod")
	refuse(s.SessionAffinityConfig != nil, "sessionAffinityConfig", "no virtual IP to keep a client on one pod")
	refuse(s.LoadBalancerIP != "", "loadBalancerIP", "no load balancers")
	refuse(len(s.LoadBalancerSourceRanges) > 0, "loadBalancerSourceRanges", "no load balancers")
	refuse(s.LoadBalancerClass != nil, "loadBalancerClass", "no load balancers")
	refuse(s.AllocateLoadBalancerNodePorts != nil, "allocateLoadBalancerNodePorts", "no load balancers")
	refuse(s.HealthCheckNodePort != 0, "healthCheckNodePort", "no node ports")
	refuse(s.ExternalTrafficPolicy != "", "externalTrafficPolicy", "no node ports or load balancers")
	refuse(s.IPFamilyPolicy != nil && *s.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack, "ipFamilyPolicy", "the pod network is IPv4 only")
	for i, f := range s.IPFamilies {
		if f != corev1.IPv4Protocol {
			all = append(all, refuseService(p.Child("ipFamilies").Index(i), "the pod network is IPv4 only"))
		}
	}
	if s.InternalTrafficPolicy != nil && !slices.Contains([]corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}, *s.InternalTrafficPolicy) {
		all = append(all, field.NotSupported(p.Child("internalTrafficPolicy"), *s.InternalTrafficPolicy, []string{"Cluster", "Local"}))
	}
	return all
}

// validateServicePort: the API server's rules, and for a headless Service
// targetPort equal to port: without a virtual IP a client connects to a
// pod's IP at the Service's port, so a numeric targetPort that differs
// would be silently wrong; a named one selects the pods whose port of that
// name is port.
func validateServicePort(sp *corev1.ServicePort, named, headless bool, names map[string]bool, p *field.Path) field.ErrorList {
	var all field.ErrorList
	switch {
	case named && sp.Name == "":
		all = append(all, field.Required(p.Child("name"), "required when a Service has several ports"))
	case sp.Name != "":
		for _, msg := range validation.IsDNS1123Label(sp.Name) {
			all = append(all, field.Invalid(p.Child("name"), sp.Name, msg))
		}
		if names[sp.Name] {
			all = append(all, field.Duplicate(p.Child("name"), sp.Name))
		}
		names[sp.Name] = true
	}
	if sp.Protocol == "" {
		sp.Protocol = corev1.ProtocolTCP
	}
	if !slices.Contains([]corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}, sp.Protocol) {
		all = append(all, field.NotSupported(p.Child("protocol"), sp.Protocol, []string{"TCP", "UDP", "SCTP"}))
	}
	for _, msg := range validation.IsValidPortNum(int(sp.Port)) {
		all = append(all, field.Invalid(p.Child("port"), sp.Port, msg))
	}
	if sp.NodePort != 0 {
		all = append(all, refuseService(p.Child("nodePort"), "no node ports; use a pod's hostPort"))
	}
	switch {
	case sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal != "":
		for _, msg := range validation.IsValidPortName(sp.TargetPort.StrVal) {
			all = append(all, field.Invalid(p.Child("targetPort"), sp.TargetPort.StrVal, msg))
		}
	case sp.TargetPort.IntValue() == 0:
		sp.TargetPort = intstr.FromInt32(sp.Port) // the API server's default
	case headless && sp.TargetPort.IntVal != sp.Port:
		all = append(all, refuseService(p.Child("targetPort"),
			fmt.Sprintf("clusterIP None: clients reach a pod's IP at port %d, so targetPort must be %d or a port name", sp.Port, sp.Port)))
	}
	return all
}

// decodeServiceAccount accepts a ServiceAccount: there are no tokens
// without a cluster, so it has no effect (docs/fields.md).
func decodeServiceAccount(obj map[string]any) (*corev1.ServiceAccount, errs) {
	var e errs
	if checkSchema(obj, serviceAccountType, nil, &e); len(e) > 0 {
		return nil, e
	}
	sa := &corev1.ServiceAccount{}
	if err := decodeCanonical(obj, sa); err != nil {
		e.add("", "decode ServiceAccount: %s", err)
		return nil, e
	}
	if sa.Namespace == "" {
		sa.Namespace = defaultNamespace
	}
	e.addField(validateDataMeta(&sa.ObjectMeta))
	return sa, e
}

// decodeServiceDoc decodes a Service or ServiceAccount document into o.
func (o *Objects) decodeServiceDoc(kind, file string, obj map[string]any, docNum int, seen map[string]int) errs {
	if kind == KindServiceAccount {
		sa, e := decodeServiceAccount(obj)
		if sa != nil {
			e = append(e, checkUniqueData(kind, sa.Namespace+"/"+sa.Name, docNum, seen)...)
			setSource(&sa.ObjectMeta, file)
			o.ServiceAccounts = append(o.ServiceAccounts, sa)
		}
		return e
	}
	svc, e := decodeService(obj)
	if svc != nil {
		e = append(e, checkUniqueData(kind, svc.Namespace+"/"+svc.Name, docNum, seen)...)
		setSource(&svc.ObjectMeta, file)
		o.Services = append(o.Services, svc)
	}
	return e
}

// isServiceKind reports the kinds decodeServiceDoc takes.
func isServiceKind(kind string) bool {
	return kind == KindService || kind == KindServiceAccount
}

// ServiceFQDN is the name a Service answers to in the cluster domain.
func ServiceFQDN(namespace, name, clusterDomain string) string {
	return strings.ToLower(name + "." + namespace + ".svc." + strings.TrimSuffix(clusterDomain, "."))
}
