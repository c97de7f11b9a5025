package manifest

// Spec hash and pod identity (see docs/ARCHITECTURE.md).
//
// The spec hash is computed over a canonical form of the document exactly as
// the user wrote it, never over the decoded and defaulted Go struct, so that
// upgrading podhost, changing our defaults or adding fields to k8s.io/api
// structs does not change any hash (which would restart every pod):
//
//   - The document is parsed (YAML or JSON) into generic data, then
//     re-encoded as compact JSON by encoding/json, which sorts object keys.
//     Key order, whitespace, comments, quoting style, YAML anchors/aliases
//     (expanded) and YAML-vs-JSON syntax therefore do not matter.
//   - Numbers are canonical: integers print as integers and other numbers
//     as the shortest float64 text, so 80, 80.0 and 8e1 hash the same.
//   - The whole document counts, metadata and status included; nothing is
//     dropped (metadata.uid, labels and annotations are part of what the user
//     asked for; the identity hash, identity.go, drops the mutable paths). The annotations podhost adds to the decoded pod are not in
//     the document, so they are not hashed. The file name is not hashed
//     either: renaming a manifest does not change its pods' UIDs.
//   - The hash is sha256 over that JSON, hex encoded, truncated to its first
//     16 characters (64 bits): short enough for labels and CLI output, and
//     collisions between two versions of one pod's manifest are negligible.
//     It is an identity, not a security boundary.
//
// A pod's UID is metadata.uid when set, else PodUID(namespace, name,
// identity hash) (identity.go): an edit of anything but the MutablePaths is
// a new pod; an edit of only those keeps the UID and is applied in place.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// HashLen is the length of a spec hash in hex characters.
const HashLen = 16

// SpecHash returns the spec hash of one document (YAML or JSON; see the
// top of hash.go for the canonical form). It fails on input Decode would
// reject before decoding into a Pod: oversized, not UTF-8, syntax errors,
// duplicate keys. It does not check that doc is a valid Pod.
func SpecHash(doc []byte) (string, error) {
	v, err := parseOne(doc)
	if err != nil {
		return "", err
	}
	canon, err := canonicalJSON(v)
	if err != nil {
		return "", fileError("", "%s", err)
	}
	return hashCanonical(canon), nil
}

// parseOne parses a single document into generic data, with Decode's
// input checks.
func parseOne(doc []byte) (any, error) {
	if err := checkInput(doc); err != nil {
		return nil, fileError("", "%s", err)
	}
	docs := splitDocs(doc)
	switch len(docs) {
	case 0:
		return nil, fileError("", "empty document")
	case 1:
	default:
		return nil, fileError("", "%d documents given, one expected", len(docs))
	}
	v, e := parseDoc(docs[0].raw, docs[0].line, docs[0].budget)
	if len(e) > 0 {
		return nil, finish("", e)
	}
	return v, nil
}

// canonicalJSON encodes generic data with sorted keys.
func canonicalJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode canonical form: %w", err)
	}
	return b, nil
}

func hashCanonical(canon []byte) string {
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])[:HashLen]
}

// PodUID derives a pod UID from its full name and spec hash: sha256 of
// "namespace/name/hash", formatted as a UUID (8-4-4-4-12 hex) with the
// RFC 9562 version 8 ("custom") and variant bits set. Deterministic, so a
// pod keeps its UID across podhost restarts as long as its identity hash
// does not change.
func PodUID(namespace, name, hash string) types.UID {
	sum := sha256.Sum256([]byte(namespace + "/" + name + "/" + hash))
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x80 // version 8
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	h := hex.EncodeToString(u)
	return types.UID(h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32])
}

// FullName returns "namespace/name".
func FullName(pod *corev1.Pod) string {
	return pod.Namespace + "/" + pod.Name
}

// Hash returns the pod's spec hash (its config-hash annotation), "" if unset.
func Hash(pod *corev1.Pod) string {
	return pod.Annotations[wellknown.AnnotationConfigHash]
}
