package cli

import "fmt"

// NotFoundError is kubectl's NotFound for a named object: `pods "web" not
// found`. podhost prints it as kubectl does, one line each:
// `Error from server (NotFound): pods "web" not found`.
type NotFoundError struct {
	Resource string // "pods", "configmaps", "secrets"
	Name     string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %q not found", e.Resource, e.Name)
}
