// Package archtest holds no code: its test keeps the import rules between
// the wings of internal/ (docs/ARCHITECTURE.md, "Wings"), run by go test
// ./... and by make lint.
package archtest
