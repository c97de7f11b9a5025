package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// Kinds accepted with no effect on one node (docs/fields.md#kinds-without-effect):
// each is decoded strictly against its upstream type, validated for its
// name, and kept as an object of the manifest dir (apply, delete, one
// owner per name) — but nothing runs or changes for it, because podhost
// has nothing it could grant or restrict:
//   - RBAC: it grants rights on the API server to ServiceAccounts and
//     users; podhost's pods get no ServiceAccount tokens and its kube API
//     (root's socket, docs/kube-api.md) has no RBAC to grant through.
//   - APIService for metrics.k8s.io/v1beta1 only: it makes `kubectl top`
//     reach a metrics server; podhost's kube API serves that API itself.
//     Any other APIService is refused: podhost aggregates no API servers.
const (
	KindRole               = "Role"
	KindClusterRole        = "ClusterRole"
	KindRoleBinding        = "RoleBinding"
	KindClusterRoleBinding = "ClusterRoleBinding"
	KindAPIService         = "APIService"
)

// ignoredKind is what a kind without effect is decoded as.
type ignoredKind struct {
	apiVersion string
	typ        reflect.Type
	namespaced bool
}

var ignoredKinds = map[string]ignoredKind{
	KindRole:               {rbacv1.SchemeGroupVersion.String(), reflect.TypeFor[rbacv1.Role](), true},
	KindClusterRole:        {rbacv1.SchemeGroupVersion.String(), reflect.TypeFor[rbacv1.ClusterRole](), false},
	KindRoleBinding:        {rbacv1.SchemeGroupVersion.String(), reflect.TypeFor[rbacv1.RoleBinding](), true},
	KindClusterRoleBinding: {rbacv1.SchemeGroupVersion.String(), reflect.TypeFor[rbacv1.ClusterRoleBinding](), false},
	KindAPIService:         {apiregv1.SchemeGroupVersion.String(), reflect.TypeFor[apiregv1.APIService](), false},
}

// IsIgnoredKind reports a kind accepted without effect.
func IsIgnoredKind(kind string) bool {
	_, ok := ignoredKinds[kind]
	return ok
}

// Ignored is one object of a kind without effect: its kind, metadata
// (namespace defaulted for the namespaced kinds, "" for the others; the
// config-source annotation set) and a hash of its content (an edit of the
// rules is a change to apply).
type Ignored struct {
	Kind       string
	ObjectMeta metav1.ObjectMeta
	Hash       string
}

// decodeIgnored decodes one document of a kind without effect.
func decodeIgnored(kind string, obj map[string]any) (*Ignored, errs) {
	var e errs
	k := ignoredKinds[kind]
	if v, _ := obj["apiVersion"].(string); v != k.apiVersion {
		e.add("apiVersion", "Unsupported value: %s: supported values: %q for a %s", describe(obj["apiVersion"]), k.apiVersion, kind)
		return nil, e
	}
	if checkSchema(obj, k.typ, nil, &e); len(e) > 0 {
		return nil, e
	}
	typed := reflect.New(k.typ).Interface()
	if err := decodeCanonical(obj, typed); err != nil {
		e.add("", "decode %s: %s", kind, err)
		return nil, e
	}
	meta := reflect.ValueOf(typed).Elem().FieldByName("ObjectMeta").Addr().Interface().(*metav1.ObjectMeta)
	all := validateIgnoredMeta(meta, k.namespaced)
	if s, ok := typed.(*apiregv1.APIService); ok {
		all = append(all, validateAPIService(s)...)
	}
	if e.addField(all); len(e) > 0 {
		return nil, e
	}
	b, _ := json.Marshal(typed) // decoded from JSON: cannot fail
	sum := sha256.Sum256(b)
	return &Ignored{Kind: kind, ObjectMeta: *meta, Hash: hex.EncodeToString(sum[:8])}, nil
}

// validateIgnoredMeta: RBAC names are path segments (system:metrics-server),
// as the API server validates them; a cluster-scoped kind has no namespace.
func validateIgnoredMeta(m *metav1.ObjectMeta, namespaced bool) field.ErrorList {
	var all field.ErrorList
	p := field.NewPath("metadata")
	if m.Name == "" {
		all = append(all, field.Required(p.Child("name"), "name is required"))
	}
	for _, msg := range path.ValidatePathSegmentName(m.Name, false) {
		all = append(all, field.Invalid(p.Child("name"), m.Name, msg))
	}
	if len(m.Name) > validation.DNS1123SubdomainMaxLength {
		all = append(all, field.TooLong(p.Child("name"), m.Name, validation.DNS1123SubdomainMaxLength))
	}
	switch {
	case !namespaced && m.Namespace != "":
		all = append(all, field.Invalid(p.Child("namespace"), m.Namespace, "not allowed on this type: it is cluster-scoped"))
	case namespaced && m.Namespace == "":
		m.Namespace = defaultNamespace
	case namespaced:
		for _, msg := range validation.IsDNS1123Label(m.Namespace) {
			all = append(all, field.Invalid(p.Child("namespace"), m.Namespace, msg))
		}
	}
	return append(all, validateLabelsAndAnnotations(m, p)...)
}

// validateAPIService accepts only the API podhost's kube API serves itself.
func validateAPIService(s *apiregv1.APIService) field.ErrorList {
	if s.Spec.Group == "metrics.k8s.io" && s.Spec.Version == "v1beta1" {
		return nil
	}
	return field.ErrorList{forbidden(field.NewPath("spec", "group"),
		fmt.Sprintf("an APIService for %s/%s (podhost's kube API aggregates no API servers; it serves metrics.k8s.io/v1beta1 itself) is", s.Spec.Group, s.Spec.Version))}
}

// addIgnored decodes a document of a kind without effect into o.
func (o *Objects) addIgnored(file, kind string, obj map[string]any, docNum int, seen map[string]int) errs {
	ig, e := decodeIgnored(kind, obj)
	if ig == nil {
		return e
	}
	e = append(e, checkUniqueData(kind, ig.ObjectMeta.Namespace+"/"+ig.ObjectMeta.Name, docNum, seen)...)
	setSource(&ig.ObjectMeta, file)
	o.Ignored = append(o.Ignored, ig)
	return e
}
