package nodeshutdown

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/godbus/dbus/v5"
)

const (
	logindService   = "org.freedesktop.login1"
	logindObject    = dbus.ObjectPath("/org/freedesktop/login1")
	logindInterface = "org.freedesktop.login1.Manager"
	// LogindDropIn raises InhibitDelayMaxSec (the kubelet writes 99-kubelet.conf).
	LogindDropIn = "/etc/systemd/logind.conf.d/99-podhost.conf"
)

// LogindConn talks to systemd-logind on the system bus.
type LogindConn struct {
	conn   *dbus.Conn
	dropIn string
}

// ConnectLogind connects to the system bus and checks that logind answers.
func ConnectLogind() (*LogindConn, error) {
	conn, err := dbus.ConnectSystemBus()
	if err != nil {
		return nil, fmt.Errorf("connect to the system bus: %w", err)
	}
	l := &LogindConn{conn: conn, dropIn: LogindDropIn}
	if _, err := l.InhibitDelayMax(); err != nil {
		conn.Close()
		return nil, err
	}
	return l, nil
}

// Close closes the bus connection (releasing any inhibitor it holds).
func (l *LogindConn) Close() error { return l.conn.Close() }

// InhibitDelayMax reads logind's InhibitDelayMaxUSec.
func (l *LogindConn) InhibitDelayMax() (time.Duration, error) {
	v, err := l.conn.Object(logindService, logindObject).GetProperty(logindInterface + ".InhibitDelayMaxUSec")
	if err != nil {
		return 0, fmt.Errorf("logind InhibitDelayMaxUSec: %w", err)
	}
	us, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("logind InhibitDelayMaxUSec: unexpected type %T", v.Value())
	}
	return time.Duration(us) * time.Microsecond, nil
}

// SetInhibitDelayMax writes the logind.conf.d drop-in and makes logind
// reload its configuration (SIGHUP through systemd's KillUnit).
func (l *LogindConn) SetInhibitDelayMax(d time.Duration) error {
	if err := os.MkdirAll(filepath.Dir(l.dropIn), 0o755); err != nil {
		return fmt.Errorf("logind drop-in dir: %w", err)
	}
	content := fmt.Sprintf("# written by podhost: shutdownGracePeriod\n[Login]\nInhibitDelayMaxSec=%d\n", int64((d+time.Second-1)/time.Second))
	if err := os.WriteFile(l.dropIn, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", l.dropIn, err)
	}
	obj := l.conn.Object("org.freedesktop.systemd1", "/org/freedesktop/systemd1")
	if err := obj.Call("org.freedesktop.systemd1.Manager.KillUnit", 0, "systemd-logind.service", "all", int32(1)).Err; err != nil {
		return fmt.Errorf("reload systemd-logind: %w", err)
	}
	// logind applies the new value once it has re-read its config; wait a
	// little for it (bounded: a slow logind only costs the warning).
	for i := 0; i < 50; i++ {
		if cur, err := l.InhibitDelayMax(); err == nil && cur >= d {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// Inhibit takes a "shutdown" delay inhibitor; the returned func releases it.
func (l *LogindConn) Inhibit() (func() error, error) {
	var fd dbus.UnixFD
	err := l.conn.Object(logindService, logindObject).Call(logindInterface+".Inhibit", 0,
		"shutdown", "podhost", "podhost terminates its pods gracefully", "delay").Store(&fd)
	if err != nil {
		return nil, fmt.Errorf("logind Inhibit: %w", err)
	}
	f := os.NewFile(uintptr(fd), "logind-inhibitor")
	return f.Close, nil
}

// WatchShutdown subscribes to logind's PrepareForShutdown signal.
func (l *LogindConn) WatchShutdown(ctx context.Context) (<-chan bool, error) {
	err := l.conn.AddMatchSignal(dbus.WithMatchInterface(logindInterface), dbus.WithMatchMember("PrepareForShutdown"),
		dbus.WithMatchObjectPath(logindObject))
	if err != nil {
		return nil, fmt.Errorf("logind: watch PrepareForShutdown: %w", err)
	}
	sigs := make(chan *dbus.Signal, 8)
	l.conn.Signal(sigs)
	out := make(chan bool, 1)
	go func() {
		defer close(out)
		defer l.conn.RemoveSignal(sigs)
		for {
			select {
			case <-ctx.Done():
				return
			case s, ok := <-sigs:
				if !ok {
					return
				}
				if s.Name != logindInterface+".PrepareForShutdown" || len(s.Body) != 1 {
					continue
				}
				if active, ok := s.Body[0].(bool); ok {
					select {
					case out <- active:
					case <-ctx.Done():
						return
					}
				}
			}
		}
	}()
	return out, nil
}
