// Package openapi holds zz_generated.openapi.go, written by openapi-gen
// (generate.sh) and not committed: GetOpenAPIDefinitions of the served
// groups' types and of every type they reference.
package openapi
