// Package wait waits on the daemon's API for pods: For is `podhost wait`
// (kubectl wait's conditions: delete, create, condition=, jsonpath=, over
// the watch, polling an older daemon), which delete also uses to wait until
// the pods it deleted are gone; Ready is `apply --wait`: until every applied
// pod runs and is ready, or has succeeded.
package wait
