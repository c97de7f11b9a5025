//go:build integration

package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// kubeReadyTimeout bounds etcd's and the API server's start on a loaded
// machine.
const kubeReadyTimeout = 3 * time.Minute

var (
	kubeBinOnce sync.Once
	kubeBinDir  string
	kubeBinErr  error
)

// KubeBinDir is the directory with kube-apiserver and etcd:
// $PODHOST_KUBE_BIN_DIR, else what <repo>/scripts/kube-apiserver.sh prints
// (it builds them into CacheDir() once, at the version of go.mod's
// k8s.io/api; later runs only check them). Once per process.
func KubeBinDir(ctx context.Context) (string, error) {
	kubeBinOnce.Do(func() { kubeBinDir, kubeBinErr = findKubeBinDir(ctx) })
	return kubeBinDir, kubeBinErr
}

func findKubeBinDir(ctx context.Context) (string, error) {
	dir := os.Getenv("PODHOST_KUBE_BIN_DIR")
	if dir == "" {
		var err error
		if dir, err = installScript(ctx, "kube-apiserver.sh"); err != nil {
			return "", err
		}
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := exec.LookPath(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("testenv: %w", err)
		}
	}
	return dir, nil
}

// KubeAPIServer is a private control plane: etcd and kube-apiserver on
// 127.0.0.1, ports the kernel picked, TLS with a CA of their own, the
// Node and RBAC authorizers, the NodeRestriction admission plugin and
// bootstrap token authentication, as a kubelet's cluster has them. The API
// server reaches kubelets at their InternalIP (then Hostname) with a
// client certificate of the CA (CN kube-apiserver-kubelet-client, O
// system:masters, as kubeadm's --kubelet-client-certificate): a node's
// kubelet API trusts CAFile for it. It holds no controllers (no
// kube-controller-manager, no scheduler): a test that needs a
// CertificateSigningRequest signed signs it with SignCSR.
type KubeAPIServer struct {
	// URL is https://127.0.0.1:PORT.
	URL string
	// Dir holds the certificates, etcd's data and both logs.
	Dir string
	// AdminKubeconfig: a system:masters client certificate.
	AdminKubeconfig string
	// CAFile is the API server's CA.
	CAFile string

	pki        *kubePKI
	etcd, kube *proc
	kubeArgs   []string // kube-apiserver's binary and flags (StartAPIServer)
	adminCert  [2]string
}

// StartKubeAPIServer starts etcd and kube-apiserver below t's temp dir
// and waits until /readyz answers 200; they are stopped (by PID) when the
// test ends, and die with the test binary (Pdeathsig).
func StartKubeAPIServer(t testing.TB) *KubeAPIServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubeReadyTimeout)
	defer cancel()
	bin, err := KubeBinDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	k := &KubeAPIServer{Dir: t.TempDir()}
	t.Cleanup(k.Close)
	if k.pki, err = newKubePKI(filepath.Join(k.Dir, "pki")); err != nil {
		t.Fatalf("testenv: kube pki: %v", err)
	}
	k.CAFile = k.pki.CAFile
	etcdPort, etcdPeer, port := FreePort(t), FreePort(t), FreePort(t)
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	k.etcd, err = startProc(filepath.Join(bin, "etcd"), filepath.Join(k.Dir, "etcd.log"),
		"--name=default", "--data-dir="+filepath.Join(k.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL, "--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		t.Fatalf("testenv: etcd: %v", err)
	}
	k.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	pki := k.pki.dir
	kubeletCert, kubeletKey, err := k.pki.clientCert("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		t.Fatalf("testenv: kube pki: %v", err)
	}
	k.kubeArgs = []string{filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers=" + etcdURL, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port), "--cert-dir=" + filepath.Join(k.Dir, "certs"),
		"--tls-cert-file=" + filepath.Join(pki, "apiserver.crt"), "--tls-private-key-file=" + filepath.Join(pki, "apiserver.key"),
		"--client-ca-file=" + k.CAFile,
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + filepath.Join(pki, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(pki, "sa.key"), "--service-cluster-ip-range=10.96.0.0/24",
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction", "--enable-bootstrap-token-auth",
		"--kubelet-client-certificate=" + kubeletCert, "--kubelet-client-key=" + kubeletKey,
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--endpoint-reconciler-type=none", "--enable-priority-and-fairness=false", "--profiling=false"}
	k.kube, err = startProc(k.kubeArgs[0], filepath.Join(k.Dir, "kube-apiserver.log"), k.kubeArgs[1:]...)
	if err != nil {
		t.Fatalf("testenv: kube-apiserver: %v", err)
	}
	cert, key, err := k.pki.clientCert("admin", "podhost-test-admin", "system:masters")
	if err != nil {
		t.Fatalf("testenv: kube pki: %v", err)
	}
	k.AdminKubeconfig = filepath.Join(k.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(k.AdminKubeconfig, k.URL, k.CAFile, cert, key); err != nil {
		t.Fatal(err)
	}
	k.adminCert = [2]string{cert, key}
	if err := k.waitReady(ctx, cert, key); err != nil {
		t.Fatalf("testenv: kube-apiserver: %v\netcd log:\n%s\nkube-apiserver log:\n%s", err, k.etcd.logTail(20), k.kube.logTail(40))
	}
	return k
}

// NodeKubeconfig writes a kubeconfig for node (a client certificate of
// system:node:<node> in system:nodes, as a kubelet's) and returns its path.
func (k *KubeAPIServer) NodeKubeconfig(t testing.TB, node string) string {
	t.Helper()
	cert, key, err := k.pki.clientCert("node-"+node, "system:node:"+node, "system:nodes")
	if err != nil {
		t.Fatalf("testenv: node certificate: %v", err)
	}
	path := filepath.Join(k.Dir, "node-"+node+".kubeconfig")
	if err := writeKubeconfig(path, k.URL, k.CAFile, cert, key); err != nil {
		t.Fatal(err)
	}
	return path
}

// SignCSR issues the client certificate a PEM certificate request asks
// for (its subject, valid from notBefore to notAfter), signed by the
// cluster's CA: what kube-controller-manager's signer does for an
// approved CSR.
func (k *KubeAPIServer) SignCSR(csrPEM []byte, notBefore, notAfter time.Time) ([]byte, error) {
	return k.pki.signCSR(csrPEM, notBefore, notAfter)
}

// waitReady polls /readyz (as admin) until it answers 200 or either
// process exits.
func (k *KubeAPIServer) waitReady(ctx context.Context, certFile, keyFile string) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(k.CAFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
	defer c.CloseIdleConnections()
	last := errors.New("not asked yet")
	for tick := time.NewTicker(200 * time.Millisecond); ; {
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready within %s: %w", kubeReadyTimeout, last)
		case <-k.etcd.exited:
			return fmt.Errorf("etcd exited: %v", k.etcd.waitErr)
		case <-k.kube.exited:
			return fmt.Errorf("kube-apiserver exited: %v", k.kube.waitErr)
		case <-tick.C:
		}
		resp, err := c.Get(k.URL + "/readyz")
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("/readyz: %s", resp.Status)
	}
}

// Close stops kube-apiserver, then etcd (SIGTERM to each PID, SIGKILL
// after 10 s). Idempotent.
func (k *KubeAPIServer) Close() {
	if k.kube != nil {
		k.kube.stop()
	}
	if k.etcd != nil {
		k.etcd.stop()
	}
}

// StopAPIServer stops kube-apiserver (SIGTERM, SIGKILL after 10 s); etcd
// keeps running, with the cluster's data. StartAPIServer starts it again.
func (k *KubeAPIServer) StopAPIServer() { k.kube.stop() }

// StartAPIServer starts kube-apiserver again after StopAPIServer, with the
// same flags, port and certificates, and waits until /readyz answers 200.
func (k *KubeAPIServer) StartAPIServer(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubeReadyTimeout)
	defer cancel()
	var err error
	if k.kube, err = startProc(k.kubeArgs[0], filepath.Join(k.Dir, "kube-apiserver.log"), k.kubeArgs[1:]...); err != nil {
		t.Fatalf("testenv: kube-apiserver: %v", err)
	}
	if err := k.waitReady(ctx, k.adminCert[0], k.adminCert[1]); err != nil {
		t.Fatalf("testenv: kube-apiserver restarted: %v\nkube-apiserver log:\n%s", err, k.kube.logTail(40))
	}
}

// LogTail: the last n lines of the API server's log.
func (k *KubeAPIServer) LogTail(n int) string { return k.kube.logTail(n) }

// proc is a control plane process.
type proc struct {
	cmd     *exec.Cmd
	log     string
	exited  chan struct{}
	waitErr error
	once    sync.Once
}

// startProc runs bin with args in its own process group, stdout and
// stderr to logPath, killed with the test binary (Pdeathsig).
func startProc(bin, logPath string, args ...string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p := &proc{cmd: exec.Command(bin, args...), log: logPath, exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		defer logf.Close()
		// Pdeathsig fires when the thread that forked exits: keep this
		// goroutine on its thread while the process runs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return p, nil
}

func (p *proc) stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		t := time.NewTimer(10 * time.Second)
		defer t.Stop()
		select {
		case <-p.exited:
		case <-t.C:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
}

func (p *proc) logTail(n int) string { return fileTail(p.log, n) }
