package runtime

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podhost/podhost/internal/host/imagesig/imagesigtest"
)

// blobs is a fake registry or content store: digest → bytes (served even
// when they do not match the digest: a lying source).
type blobs map[digest.Digest][]byte

func (b blobs) fetch(_ context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	data, ok := b[d.Digest]
	if !ok {
		return nil, errors.New("not found")
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// referrerBundles reads only bundles of referrers whose subject is the
// image, checks every blob against its descriptor, and bounds what it
// reads per blob and per image.
func TestReferrerBundles(t *testing.T) {
	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("image"), Size: 5}
	bundle := []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`)
	man, parts, err := imagesigtest.Referrer(subject, bundle)
	if err != nil {
		t.Fatal(err)
	}
	good := blobs{man.Desc.Digest: man.Data}
	for _, p := range parts {
		good[p.Desc.Digest] = p.Data
	}
	lying := blobs{man.Desc.Digest: man.Data, parts[1].Desc.Digest: []byte(strings.Repeat("x", len(bundle)))}
	big := man.Desc
	big.Size = maxReferrerBytes + 1
	cases := []struct {
		name    string
		src     blobs
		desc    ocispec.Descriptor
		subject digest.Digest
		budget  int64
		want    int
		wantErr string
	}{
		{"the image's referrer", good, man.Desc, subject.Digest, maxTotalBytes, 1, ""},
		{"another image's referrer", good, man.Desc, digest.FromString("other"), maxTotalBytes, 0, ""},
		{"a bundle that is not what its digest says", lying, man.Desc, subject.Digest, maxTotalBytes, 0, "does not match its descriptor"},
		{"a referrer too large", good, big, subject.Digest, maxTotalBytes, 0, "beyond the"},
		{"over the image's budget", good, man.Desc, subject.Digest, man.Desc.Size + 1, 0, "may not exceed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := referrerBundles(context.Background(), tc.src.fetch, tc.desc, tc.subject, "test ", &budget{bytes: tc.budget})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(got) != tc.want {
				t.Fatalf("%d bundles, %v; want %d", len(got), err, tc.want)
			}
			if tc.want == 1 && !bytes.Equal(got[0].Data, bundle) {
				t.Fatalf("bundle %q", got[0].Data)
			}
		})
	}
}
