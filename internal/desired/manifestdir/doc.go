// Package manifestdir writes the manifest dir, where podhost keeps what the
// user asked for: Pods, ConfigMaps and Secrets, as the documents the user
// wrote. `podhost apply` and `podhost delete` write through it (also with
// the daemon down), and so does a server that accepts writes; the daemon's
// source (internal/desired/source) reads the dir and picks every change up.
//
// The API takes documents, decoded once by Decode into an Object that
// carries both the document and the decoded object. The document is what
// is written: it is the user's words, without the defaults, UID and
// annotations the decoder adds, so a pod's spec hash and identity stay
// what the source will compute from the file (writing the decoded object
// would bake the defaults in and change them, restarting the pod), and a
// replaced document keeps the form it was given in. The decoded object is
// what plans the write: unchanged detection, immutable ConfigMaps and
// Secrets, the podhost.io/after order.
//
// Apply writes each object into the file that already declares it,
// replacing just its document, or into a new file named after it
// (newFileName); Delete removes the documents that declare the objects,
// and the files left empty. Every write is atomic (a dotfile temp in the
// same dir, which the source ignores, fsync, rename, fsync of the dir), so
// the source never reads half a file; a file holding a Secret is written
// 0600. Apply and Delete hold an exclusive flock on the dir from their
// scan to their last write, so concurrent writers — several CLI runs, the
// requests of a server (each call opens the dir anew, and flocks of two
// opens exclude each other in one process too) — serialize their
// read-modify-write.
package manifestdir
