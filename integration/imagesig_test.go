//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/host/imagesig/imagesigtest"
	"github.com/podhost/podhost/internal/model/wellknown"
	"github.com/podhost/podhost/internal/testenv"
)

func newSigner(t *testing.T) *imagesigtest.Signer {
	t.Helper()
	s, err := imagesigtest.NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pushVariant pushes a variant of the test image (its own digest) to reg
// as repo:1 and returns the remote ref and the manifest's descriptor. The
// variant and the pulled remote ref are removed from containerd at the end.
func pushVariant(t *testing.T, reg *testenv.Registry, repo string) (string, ocispec.Descriptor) {
	t.Helper()
	ctx := testCtx(t, 2*time.Minute)
	v := testenv.ImageVariant{Ref: "podhost.test/" + repo + ":1", Passwd: repo + ":x:1000:1000::/:/bin/sh\n"}
	importVariant(t, v)
	img, err := env.Client().GetImage(ctx, v.Ref)
	if err != nil {
		t.Fatal(err)
	}
	remote := reg.Ref(repo + ":1")
	if err := testenv.PushImage(ctx, env.Client(), v.Ref, remote, reg.Creds); err != nil {
		t.Fatal(err)
	}
	deleteImagesAtEnd(t, remote)
	return remote, img.Target()
}

// deleteImagesAtEnd removes the named images, and every signature an
// archive brought (LabelSignatureFor), from containerd when t ends.
func deleteImagesAtEnd(t *testing.T, refs ...string) {
	t.Cleanup(func() {
		ctx := env.Context(context.Background())
		is := env.Client().ImageService()
		sigs, err := is.List(ctx, "labels."+strconv.Quote(wellknown.LabelSignatureFor))
		if err != nil {
			t.Error(err)
		}
		for _, s := range sigs {
			refs = append(refs, s.Name)
		}
		for _, ref := range refs {
			if err := is.Delete(ctx, ref); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
				t.Errorf("delete image %s: %v", ref, err)
			}
		}
	})
}

// waitContainerWaiting waits until container of pod name waits with a
// reason in reasons whose message holds every one of subs, and returns
// "reason: message".
func waitContainerWaiting(d *podhostd, name, container string, reasons []string, subs ...string) string {
	d.t.Helper()
	var got string
	d.waitPod(name, 90*time.Second, container+" waiting in "+strings.Join(reasons, "|"), func(p *corev1.Pod) bool {
		cs := containerStatus(p, container)
		if cs == nil || cs.State.Waiting == nil {
			return false
		}
		got = cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message
		for _, r := range reasons {
			if cs.State.Waiting.Reason == r {
				for _, s := range subs {
					if !strings.Contains(cs.State.Waiting.Message, s) {
						return false
					}
				}
				return true
			}
		}
		return false
	})
	return got
}

// refused: the container waits on the signature (the refusal itself, or
// the pull back-off that repeats it) and never exists in containerd.
var refused = []string{"SignatureValidationFailed", "ImagePullBackOff"}

// TestSignedImages (issue 34): with imagePolicy requiring signatures by a
// key, an image signed by that key (a Sigstore bundle pushed to the test
// registry as an OCI referrer, cosign's format, made with sigstore-go)
// runs; an unsigned image and one signed by another key never get a
// container in containerd, wait with the reason, and have an event, while
// their pod's other container runs; an archive in the images directory
// carrying its signature (a referrer in the OCI layout) runs with no
// registry, an unsigned one is refused. With the policy off, all run.
func TestSignedImages(t *testing.T) {
	reg, signedRef := registryImage(t, testenv.RegistryOptions{})
	ctx := testCtx(t, 2*time.Minute)
	vendor, other := newSigner(t), newSigner(t)
	if err := testenv.PushSignature(ctx, env.Client(), reg, "podhost/busybox", testImage(t).Target(), vendor); err != nil {
		t.Fatal(err)
	}
	unsignedRef, _ := pushVariant(t, reg, "podhost/unsigned")
	otherRef, otherDesc := pushVariant(t, reg, "podhost/other")
	if err := testenv.PushSignature(ctx, env.Client(), reg, "podhost/other", otherDesc, other); err != nil {
		t.Fatal(err)
	}

	d := newPodhostd(t)
	plain, err := os.ReadFile(d.configPath)
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(d.dir, "vendor.pub")
	if err := vendor.WritePublicKey(key); err != nil {
		t.Fatal(err)
	}
	appendConfig(t, d, fmt.Sprintf("imagePolicy:\n  requireSignatures: true\n  keys: [%s]\n", key))
	imagesDir := filepath.Join(d.stateDir, "images")
	if err := os.MkdirAll(imagesDir, 0o700); err != nil {
		t.Fatal(err)
	}
	offline, offlineUnsigned := appRef(t, "offline"), appRef(t, "offline-unsigned")
	deleteImagesAtEnd(t, offline, offlineUnsigned)
	if err := testenv.BuildAppImage(filepath.Join(imagesDir, "offline.tar"), testenv.AppImage{Ref: offline, SignedBy: vendor}); err != nil {
		t.Fatal(err)
	}
	if err := testenv.BuildAppImage(filepath.Join(imagesDir, "offline-unsigned.tar"), testenv.AppImage{Ref: offlineUnsigned}); err != nil {
		t.Fatal(err)
	}
	d.writeManifest("mixed.yaml", podManifest("mixed", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - {name: signed, image: %s, imagePullPolicy: Always, command: [sleep, "3600"]}
  - {name: unsigned, image: %s, imagePullPolicy: Always, command: [sleep, "3600"]}
`, signedRef, unsignedRef)))
	d.writeManifest("other.yaml", registryPod("other", otherRef))
	d.writeManifest("offline.yaml", podWithImage("offline", offline))
	d.writeManifest("offline-unsigned.yaml", podWithImage("offline-unsigned", offlineUnsigned))
	d.start()

	d.waitPod("mixed", 90*time.Second, "container signed running", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "signed")
		return cs != nil && cs.State.Running != nil
	})
	t.Logf("unsigned: %s", waitContainerWaiting(d, "mixed", "unsigned", refused, unsignedRef, "no signature", key))
	d.waitEvent("mixed", "Failed", "SignatureValidationFailed: image signature verification failed: image "+unsignedRef, 60*time.Second)
	t.Logf("other: %s", waitContainerWaiting(d, "other", "main", refused, otherRef, "no valid signature by "+key))
	d.waitEvent("other", "Failed", "SignatureValidationFailed", 60*time.Second)
	d.waitRunning("offline")
	t.Logf("offline-unsigned: %s", waitContainerWaiting(d, "offline-unsigned", "app", refused, offlineUnsigned, "none in the content store"))
	if cs := podContainers(t, string(d.pod("mixed").UID)); len(cs) != 1 || !containsValue(cs, "signed") {
		t.Errorf("mixed: containers %v in containerd, want only signed", cs)
	}
	for _, name := range []string{"other", "offline-unsigned"} {
		if cs := podContainers(t, string(d.pod(name).UID)); len(cs) > 0 {
			t.Errorf("%s: containers %v in containerd, want none", name, cs)
		}
	}

	// The policy off: everything runs as before.
	d.kill(syscall.SIGTERM)
	if err := os.WriteFile(d.configPath, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	d.out.Reset()
	d.start()
	for _, name := range []string{"mixed", "other", "offline", "offline-unsigned"} {
		d.waitRunning(name)
	}
}

func containsValue(m map[string]string, v string) bool {
	for _, x := range m {
		if x == v {
			return true
		}
	}
	return false
}
