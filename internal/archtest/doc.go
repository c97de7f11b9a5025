// Package archtest holds no code: its tests keep docs/ARCHITECTURE.md true.
// wings_test.go enforces the import rules between the wings of internal/
// (the doc's layer map); doc_test.go checks that every Go name the doc
// gives exists in the code. Both run in go test ./... and make lint.
package archtest
