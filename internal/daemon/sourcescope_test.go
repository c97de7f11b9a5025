package daemon

import (
	"fmt"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/desired/configdata"
	"github.com/podhost/podhost/internal/host/spec"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// refKinds are the ways a pod names a ConfigMap or Secret, each resolved
// as the syncer resolves it; found: the object's value reached the pod.
// The reference is optional when optional is set (then a missing object
// is skipped), else a missing one fails with the kubelet's message.
var refKinds = map[string]func(look configdata.Lookup, pod *corev1.Pod, name string, optional bool) (found bool, err error){
	"env configMapKeyRef": func(look configdata.Lookup, pod *corev1.Pod, name string, optional bool) (bool, error) {
		return envHas(look, pod, corev1.Container{Env: []corev1.EnvVar{{Name: "V", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref(name), Key: "k", Optional: &optional}}}}})
	},
	"env secretKeyRef": func(look configdata.Lookup, pod *corev1.Pod, name string, optional bool) (bool, error) {
		return envHas(look, pod, corev1.Container{Env: []corev1.EnvVar{{Name: "V", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref(name), Key: "k", Optional: &optional}}}}})
	},
	"envFrom configMapRef": func(look configdata.Lookup, pod *corev1.Pod, name string, optional bool) (bool, error) {
		return envHas(look, pod, corev1.Container{EnvFrom: []corev1.EnvFromSource{{Prefix: "V",
			ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref(name), Optional: &optional}}}})
	},
	"envFrom secretRef": func(look configdata.Lookup, pod *corev1.Pod, name string, optional bool) (bool, error) {
		return envHas(look, pod, corev1.Container{EnvFrom: []corev1.EnvFromSource{{Prefix: "V",
			SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref(name), Optional: &optional}}}})
	},
	"configMap volume": func(look configdata.Lookup, pod *corev1.Pod, name string, optional bool) (bool, error) {
		files, err := configdata.ConfigMapPayload(look, pod.Namespace, &corev1.ConfigMapVolumeSource{LocalObjectReference: ref(name), Optional: &optional})
		return string(files["k"].Data) == "value", err
	},
	"secret volume": func(look configdata.Lookup, pod *corev1.Pod, name string, optional bool) (bool, error) {
		files, err := configdata.SecretPayload(look, pod.Namespace, &corev1.SecretVolumeSource{SecretName: name, Optional: &optional})
		return string(files["k"].Data) == "value", err
	},
	"projected configMap": func(look configdata.Lookup, pod *corev1.Pod, name string, optional bool) (bool, error) {
		files, err := configdata.ProjectedPayload(look, pod, &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref(name), Optional: &optional}}}}, nil)
		return string(files["k"].Data) == "value", err
	},
	"projected secret": func(look configdata.Lookup, pod *corev1.Pod, name string, optional bool) (bool, error) {
		files, err := configdata.ProjectedPayload(look, pod, &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{LocalObjectReference: ref(name), Optional: &optional}}}}, nil)
		return string(files["k"].Data) == "value", err
	},
	"imagePullSecrets": func(look configdata.Lookup, pod *corev1.Pod, name string, _ bool) (bool, error) {
		sec, ok := look.Secret(pod.Namespace, name) // as syncer.pullSecrets: a missing one is a warning event
		return ok && string(sec.Data["k"]) == "value", nil
	},
}

func ref(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }

// envHas: the container's environment has V (or Vk, envFrom's prefix) = value.
func envHas(look configdata.Lookup, pod *corev1.Pod, c corev1.Container) (bool, error) {
	env, err := spec.ResolveEnv(spec.Pod{Pod: pod, Data: look}, &c)
	for _, e := range env {
		if (e.Name == "V" || e.Name == "Vk") && e.Value == "value" {
			return true, err
		}
	}
	return false, err
}

// TestPodsReadOnlyTheirOwnSourcesObjects: a pod resolves a ConfigMap or
// Secret reference only against the objects its own source declared
// (the manifest dir with apply's and the kube API's files, the manifest
// URL or artifact, the cluster dir), for every kind of reference; another
// source's object of that name is missing for it, as an object the API
// server does not have is for the kubelet: an optional reference is
// skipped, any other fails with the kubelet's "not found".
func TestPodsReadOnlyTheirOwnSourcesObjects(t *testing.T) {
	cfg := config.Default()
	cfg.ManifestDir, cfg.StateDir = "/etc/podhost/manifests", t.TempDir()
	d := &daemon{cfg: cfg}
	d.data = configdata.NewStore(d.sourceScope)
	sources := map[string]string{
		"manifestDir": filepath.Join(cfg.ManifestDir, "apps.yaml"),
		"apply":       filepath.Join(cfg.ManifestDir, "apps_web.yaml"), // podhost apply and the kube API write here
		"URL":         "https://config.example.com/pods.yaml",
		"artifact":    "oci://registry.example.com/pods:v1#pods.yaml",
		"cluster":     filepath.Join(cfg.ClusterManifestDir(), "apps_web.yaml"),
	}
	objects := map[string]string{"manifestDir": sources["manifestDir"], "URL": sources["URL"], "cluster": sources["cluster"]}
	var cms []*corev1.ConfigMap
	var secrets []*corev1.Secret
	for from, src := range objects {
		meta := metav1.ObjectMeta{Namespace: "apps", Name: "from-" + from, Annotations: map[string]string{wellknown.AnnotationConfigSource: src}}
		cms = append(cms, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "value"}})
		secrets = append(secrets, &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"k": []byte("value")}})
	}
	d.data.Replace(cms, secrets)
	// own: which objects each pod source may read.
	own := map[string]string{"manifestDir": "manifestDir", "apply": "manifestDir", "URL": "URL", "artifact": "URL", "cluster": "cluster"}
	for podFrom, src := range sources {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web",
			Annotations: map[string]string{wellknown.AnnotationConfigSource: src}}}
		look := d.data.For(pod)
		for objFrom := range objects {
			for kind, resolve := range refKinds {
				name := "from-" + objFrom
				t.Run(fmt.Sprintf("%s pod/%s object/%s", podFrom, objFrom, kind), func(t *testing.T) {
					want := own[podFrom] == objFrom
					found, err := resolve(look, pod, name, false)
					if want && (!found || err != nil) {
						t.Fatalf("own source's object: found %v, err %v; want its value", found, err)
					}
					if want {
						return
					}
					if found {
						t.Fatal("another source's object reached the pod")
					}
					if wantErr := notFound(kind, name); err == nil && wantErr != "" || err != nil && err.Error() != wantErr {
						t.Errorf("required reference: err %v, want the kubelet's %q", err, wantErr)
					}
					if found, err := resolve(look, pod, name, true); found || err != nil {
						t.Errorf("optional reference: found %v, err %v; want it skipped", found, err)
					}
				})
			}
		}
	}
}

// notFound is the kubelet's error for a missing object of a required
// reference ("" for imagePullSecrets: a warning, the pull goes on).
func notFound(kind, name string) string {
	object := "secret"
	if kind == "env configMapKeyRef" || kind == "envFrom configMapRef" || kind == "configMap volume" || kind == "projected configMap" {
		object = "configmap"
	}
	msg := fmt.Sprintf("%s %q not found", object, name)
	switch kind {
	case "imagePullSecrets":
		return ""
	case "env configMapKeyRef", "env secretKeyRef":
		return "env V: " + msg
	case "envFrom configMapRef", "envFrom secretRef":
		return "envFrom[0]: " + msg
	case "projected configMap", "projected secret":
		return "sources[0]: " + msg
	}
	return msg
}
