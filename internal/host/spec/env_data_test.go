package spec

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type fakeData struct {
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

func (f fakeData) ConfigMap(ns, name string) (*corev1.ConfigMap, bool) {
	cm, ok := f.cms[ns+"/"+name]
	return cm, ok
}

func (f fakeData) Secret(ns, name string) (*corev1.Secret, bool) {
	s, ok := f.secrets[ns+"/"+name]
	return s, ok
}

func TestResolveEnvConfigData(t *testing.T) {
	yes := true
	data := fakeData{
		cms:     map[string]*corev1.ConfigMap{"prod/app": {Data: map[string]string{"MODE": "fast", "LEVEL": "3", "bad=key": "x", "1NUM": "y"}}},
		secrets: map[string]*corev1.Secret{"prod/creds": {Data: map[string][]byte{"user": []byte("admin"), "pw": []byte("s3cret")}}},
	}
	cmKey := func(name, key string, optional bool) *corev1.EnvVarSource {
		r := &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
		if optional {
			r.Optional = &yes
		}
		return &corev1.EnvVarSource{ConfigMapKeyRef: r}
	}
	secKey := func(name, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
	}
	for _, tc := range []struct {
		name    string
		c       corev1.Container
		want    string // NAME=value ... or the error
		warning string
	}{
		{"envFrom configMap, invalid keys skipped", corev1.Container{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}},
			"1NUM=y LEVEL=3 MODE=fast", "InvalidEnvironmentVariableNames: Keys [bad=key] from the EnvFrom configMap prod/app were skipped since they are considered invalid environment variable names."},
		{"envFrom secret with prefix, env overrides and expands", corev1.Container{
			EnvFrom: []corev1.EnvFromSource{{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}},
			Env:     []corev1.EnvVar{{Name: "DB_user", Value: "root"}, {Name: "URL", Value: "db://$(DB_user):$(DB_pw)@h"}}},
			"DB_pw=s3cret DB_user=root URL=db://root:s3cret@h", ""},
		{"keyRefs", corev1.Container{Env: []corev1.EnvVar{{Name: "M", ValueFrom: cmKey("app", "MODE", false)}, {Name: "U", ValueFrom: secKey("creds", "user")}}},
			"M=fast U=admin", ""},
		{"optional missing skipped", corev1.Container{Env: []corev1.EnvVar{{Name: "M", ValueFrom: cmKey("nope", "MODE", true)}, {Name: "K", ValueFrom: cmKey("app", "nokey", true)}},
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: &yes}}}},
			"", ""},
		{"missing configMap", corev1.Container{Env: []corev1.EnvVar{{Name: "M", ValueFrom: cmKey("nope", "MODE", false)}}}, `env M: configmap "nope" not found`, ""},
		{"missing key", corev1.Container{Env: []corev1.EnvVar{{Name: "M", ValueFrom: cmKey("app", "nokey", false)}}}, "env M: couldn't find key nokey in ConfigMap prod/app", ""},
		{"missing secret key", corev1.Container{Env: []corev1.EnvVar{{Name: "P", ValueFrom: secKey("creds", "token")}}}, "env P: couldn't find key token in Secret prod/creds", ""},
		{"missing envFrom secret", corev1.Container{EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}}}}}, `envFrom[0]: secret "x" not found`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warnings []string
			p := Pod{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "web"}}, Data: data,
				Warn: func(reason, msg string) { warnings = append(warnings, reason+": "+msg) }}
			env, err := ResolveEnv(p, &tc.c)
			var got string
			if err != nil {
				got = err.Error()
			} else {
				var parts []string
				for _, e := range env {
					parts = append(parts, e.Name+"="+e.Value)
				}
				got = strings.Join(parts, " ")
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			var wantW []string
			if tc.warning != "" {
				wantW = []string{tc.warning}
			}
			if !reflect.DeepEqual(warnings, wantW) {
				t.Errorf("warnings %q, want %q", warnings, wantW)
			}
		})
	}
}
