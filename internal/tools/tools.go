//go:build tools

// Package tools pins podhost's dependencies in go.mod before code imports them.
package tools

import (
	_ "github.com/containerd/cgroups/v3"
	_ "github.com/containerd/cgroups/v3/cgroup1"
	_ "github.com/containerd/cgroups/v3/cgroup2"
	_ "github.com/containerd/containerd/v2/client"
	_ "github.com/containerd/containerd/v2/core/runtime/v2/logging"
	_ "github.com/containerd/containerd/v2/pkg/cio"
	_ "github.com/containerd/containerd/v2/pkg/netns"
	_ "github.com/containerd/containerd/v2/pkg/oci"
	_ "github.com/containerd/go-cni"
	_ "github.com/coreos/go-systemd/v22/daemon"
	_ "github.com/coreos/go-systemd/v22/dbus"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/opencontainers/runtime-spec/specs-go"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "go.etcd.io/bbolt"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/api/resource"
	_ "k8s.io/apimachinery/pkg/util/validation"
	_ "sigs.k8s.io/yaml"
)
