// Package cli implements podhost's commands that read the node: get,
// describe (pods and the node), logs, exec, events, top and rollout as
// clients of the daemon's API (internal/services/api); images, which
// talks to containerd itself; check, which probes the host; and version.
// cmd/podhost parses flags into the option structs here and calls one
// function per command.
//
// The other command families have packages of their own: manifestcmd
// (apply, delete, get and describe of ConfigMaps and Secrets: the
// manifest dir, without the daemon), wait, cp; printers is the kubectl
// printing library they share, cmdutil what else they share.
package cli
