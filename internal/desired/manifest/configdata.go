package manifest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kinds of configuration objects a manifest may hold beside Pods.
const (
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
)

// MaxDataSize is the largest ConfigMap or Secret, in bytes of keys and
// values (Kubernetes' 1 MiB limit).
const MaxDataSize = 1 << 20

// Objects is everything one manifest file declares, in document order per
// kind. ConfigMaps and Secrets are namespaced (default: "default"); a
// Secret's stringData is merged into data (it wins for the same key, as
// in Kubernetes) and then cleared.
type Objects struct {
	Pods       []*corev1.Pod
	ConfigMaps []*corev1.ConfigMap
	Secrets    []*corev1.Secret
	// Services and ServiceAccounts (service.go).
	Services        []*corev1.Service
	ServiceAccounts []*corev1.ServiceAccount
	Workloads       []*Workload // their pods are in Pods too (workload.go)
	// Ignored are the objects of kinds without effect (ignored.go).
	Ignored []*Ignored

	expanded int64 // bytes of pod templates times the pods made of them (MaxExpandedBytes)
}

var (
	configMapType = reflect.TypeFor[corev1.ConfigMap]()
	secretType    = reflect.TypeFor[corev1.Secret]()
)

// secretTypes are the Secret types podhost accepts.
var secretTypes = []corev1.SecretType{
	corev1.SecretTypeOpaque, corev1.SecretTypeDockerConfigJson,
	corev1.SecretTypeTLS, corev1.SecretTypeBasicAuth,
}

// checkUniqueData rejects a ConfigMap or Secret declared twice in a file.
func checkUniqueData(kind, name string, docNum int, seen map[string]int) errs {
	var e errs
	key := kind + " " + name
	if first, dup := seen[key]; dup {
		e.add("metadata.name", "Duplicate value: %s %q: also defined in document %d of this file", kind, name, first)
		return e
	}
	seen[key] = docNum
	return e
}

func decodeConfigMap(obj map[string]any) (*corev1.ConfigMap, errs) {
	var e errs
	if checkSchema(obj, configMapType, nil, &e); len(e) > 0 {
		return nil, e
	}
	cm := &corev1.ConfigMap{}
	if err := decodeCanonical(obj, cm); err != nil {
		e.add("", "decode ConfigMap: %s", err)
		return nil, e
	}
	if cm.Namespace == "" {
		cm.Namespace = defaultNamespace
	}
	all := validateDataMeta(&cm.ObjectMeta)
	size := 0
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		all = append(all, validateDataKey(field.NewPath("data").Key(k), k)...)
		size += len(k) + len(cm.Data[k])
		if _, dup := cm.BinaryData[k]; dup {
			all = append(all, field.Invalid(field.NewPath("binaryData").Key(k), k, "duplicate of key present in data"))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		all = append(all, validateDataKey(field.NewPath("binaryData").Key(k), k)...)
		size += len(k) + len(cm.BinaryData[k])
	}
	all = append(all, validateDataSize(size)...)
	e.addField(all)
	return cm, e
}

func decodeSecret(obj map[string]any) (*corev1.Secret, errs) {
	// data and stringData are checked here, never echoing a value, and left
	// out of the schema check (whose messages quote values).
	e := checkSecretData(obj)
	rest := maps.Clone(obj)
	delete(rest, "data")
	delete(rest, "stringData")
	if checkSchema(rest, secretType, nil, &e); len(e) > 0 {
		return nil, e
	}
	sec := &corev1.Secret{}
	if err := decodeCanonical(obj, sec); err != nil {
		e.add("", "decode Secret: cannot decode the object")
		return nil, e
	}
	if sec.Namespace == "" {
		sec.Namespace = defaultNamespace
	}
	if sec.Type == "" {
		sec.Type = corev1.SecretTypeOpaque
	}
	if len(sec.StringData) > 0 && sec.Data == nil {
		sec.Data = map[string][]byte{}
	}
	for k, v := range sec.StringData {
		sec.Data[k] = []byte(v)
	}
	sec.StringData = nil
	all := validateDataMeta(&sec.ObjectMeta)
	size := 0
	for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
		all = append(all, validateDataKey(field.NewPath("data").Key(k), k)...)
		size += len(k) + len(sec.Data[k])
	}
	all = append(all, validateDataSize(size)...)
	all = append(all, validateSecretType(sec)...)
	e.addField(all)
	return sec, e
}

// checkSecretData requires data to map keys to base64 strings and
// stringData to map keys to strings, without quoting any value.
func checkSecretData(obj map[string]any) errs {
	var e errs
	for _, f := range []string{"data", "stringData"} {
		v, ok := obj[f]
		if !ok || v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			e.add(f, "Invalid value: expected an object of key: value, got %s", kindOf(v))
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			s, ok := m[k].(string)
			switch {
			case !ok:
				e.add(fpath(nil).field(f).key(k).String(), "Invalid value: expected a string (value not shown), got %s", kindOf(m[k]))
			case f == "data":
				if _, err := base64.StdEncoding.DecodeString(s); err != nil {
					e.add(fpath(nil).field(f).key(k).String(), "Invalid value: not valid base64 (value not shown; use stringData for plain text)")
				}
			}
		}
	}
	return e
}

func decodeCanonical(obj map[string]any, v any) error {
	canon, err := canonicalJSON(obj)
	if err != nil {
		return err
	}
	return strictUnmarshal(canon, v)
}

func validateDataMeta(m *metav1.ObjectMeta) field.ErrorList {
	var all field.ErrorList
	p := field.NewPath("metadata")
	if m.Name == "" {
		all = append(all, field.Required(p.Child("name"), "name is required"))
	}
	for _, msg := range validation.IsDNS1123Subdomain(m.Name) {
		if m.Name != "" {
			all = append(all, field.Invalid(p.Child("name"), m.Name, msg))
		}
	}
	for _, msg := range validation.IsDNS1123Label(m.Namespace) {
		all = append(all, field.Invalid(p.Child("namespace"), m.Namespace, msg))
	}
	return append(all, validateLabelsAndAnnotations(m, p)...)
}

func validateDataKey(p *field.Path, k string) field.ErrorList {
	var all field.ErrorList
	for _, msg := range validation.IsConfigMapKey(k) {
		all = append(all, field.Invalid(p, k, msg))
	}
	return all
}

func validateDataSize(size int) field.ErrorList {
	if size <= MaxDataSize {
		return nil
	}
	return field.ErrorList{field.TooLong(field.NewPath("data"), "", MaxDataSize)}
}

func validateSecretType(sec *corev1.Secret) field.ErrorList {
	p := field.NewPath("type")
	need := func(keys ...string) field.ErrorList {
		var all field.ErrorList
		for _, k := range keys {
			if _, ok := sec.Data[k]; !ok {
				all = append(all, field.Required(field.NewPath("data").Key(k), fmt.Sprintf("required for a Secret of type %s", sec.Type)))
			}
		}
		return all
	}
	switch sec.Type {
	case corev1.SecretTypeOpaque:
		return nil
	case corev1.SecretTypeTLS:
		return need(corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	case corev1.SecretTypeBasicAuth:
		if _, u := sec.Data[corev1.BasicAuthUsernameKey]; u {
			return nil
		}
		if _, pw := sec.Data[corev1.BasicAuthPasswordKey]; pw {
			return nil
		}
		return field.ErrorList{field.Required(field.NewPath("data").Key(corev1.BasicAuthUsernameKey),
			"username or password is required for a Secret of type "+string(sec.Type))}
	case corev1.SecretTypeDockerConfigJson:
		if all := need(corev1.DockerConfigJsonKey); len(all) > 0 {
			return all
		}
		var v map[string]any
		if err := json.Unmarshal(sec.Data[corev1.DockerConfigJsonKey], &v); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("data").Key(corev1.DockerConfigJsonKey), "<secret contents redacted>", "not a JSON object")}
		}
		return nil
	}
	return field.ErrorList{unsupported(p, string(sec.Type), "supported: "+quoteList(secretTypes))}
}
