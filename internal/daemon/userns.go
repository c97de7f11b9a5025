package daemon

import (
	"github.com/podhost/podhost/internal/host/sandbox"
	"github.com/podhost/podhost/internal/host/statedir"
	"github.com/podhost/podhost/internal/kubelet/syncer"
	"github.com/podhost/podhost/internal/kubelet/userns"
)

// userNamespaces checks once, at start, whether pods with hostUsers: false
// can run here (sandbox.CheckUserNS on the pods dir and the run dir) and
// returns why not ("" when they can), and the range manager (the kubelet's
// default ranges; nil when they cannot).
func (d *daemon) userNamespaces() (string, syncer.UserNamespaces) {
	checked, err := sandbox.CheckUserNS(statedir.PodsDir(d.cfg.StateDir), d.cfg.RunDir)
	if err != nil {
		d.log.Warn("pods with hostUsers: false will be refused", "reason", err.Error())
		return err.Error(), nil
	}
	m, err := userns.New(d.db, userns.DefaultFirstID, userns.DefaultLength)
	if err != nil {
		return err.Error(), nil
	}
	d.log.Debug("user namespaces: idmapped mounts work", "on", checked)
	return "", m
}
