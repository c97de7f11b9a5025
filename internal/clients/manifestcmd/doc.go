// Package manifestcmd implements the commands that work from the manifest
// dir, also with the daemon down: apply and delete, which read their -f
// inputs (files, dirs, stdin; Lists expanded, what `get -o yaml` adds
// dropped) and write through internal/desired/manifestdir, printing as
// kubectl does; and get and describe of ConfigMaps and Secrets, which read
// the dir as the daemon's source does. The daemon picks every change up;
// delete then waits, through the API, until the pods are gone (wait).
package manifestcmd
