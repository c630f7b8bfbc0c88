package devcluster

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Fixed paths where Kueue reads its metrics and visibility serving
// certificates (it has no flag for them).
const (
	kueueMetricsCertDir    = "/etc/kueue/metrics/certs"
	kueueVisibilityCertDir = "/visibility"
)

// keyPair is a certificate and its private key.
type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// certSpec describes a certificate signed by one of the local CAs.
type certSpec struct {
	file   string // base name under .local/pki (…crt, …key)
	cn     string
	orgs   []string
	server bool
	client bool
	ips    []net.IP
	dns    []string
}

// Client identities of the control plane and the tools that run next to it.
var clientCerts = []certSpec{
	{file: "admin", cn: "kubernetes-admin", orgs: []string{"system:masters"}, client: true},
	{file: "kube-controller-manager", cn: "system:kube-controller-manager", client: true},
	{file: "kube-scheduler", cn: "system:kube-scheduler", client: true},
	// Kueue and kwok manage cluster-wide objects of many kinds; in the dev
	// cluster they run with full rights like the admin.
	{file: "kueue", cn: "gantry-dev:kueue", orgs: []string{"system:masters"}, client: true},
	{file: "kwok", cn: "gantry-dev:kwok", orgs: []string{"system:masters"}, client: true},
}

// apiServerKubeletClient is the identity the API server presents to kwok's
// kubelet-like server when it proxies pods/log.
var apiServerKubeletClient = certSpec{file: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", client: true}

const frontProxyClientCN = "front-proxy-client"

// ensurePKI creates the certificates the cluster needs, keeping ones that
// already exist and are signed by the current CA.
func ensurePKI(l Layout) error {
	dir := l.PKI()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	ca, err := ensureCA(dir, "ca", "gantry-dev-ca")
	if err != nil {
		return err
	}
	fp, err := ensureCA(dir, "front-proxy-ca", "gantry-dev-front-proxy-ca")
	if err != nil {
		return err
	}
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	serving := []certSpec{
		{file: "apiserver", cn: "kube-apiserver", server: true,
			ips: append(loopback, net.ParseIP("10.96.0.1")),
			dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
		{file: "kueue-serving", cn: "kueue-webhook", server: true, ips: loopback,
			dns: []string{"localhost", "kueue-webhook-service.kueue-system.svc", "visibility-server.kueue-system.svc"}},
		// kwok's kubelet-like server, reached by the API server at the
		// simulated nodes' address (127.0.0.1).
		{file: "kwok-serving", cn: "kwok-kubelet", server: true, ips: loopback, dns: []string{"localhost"}},
	}
	for _, spec := range append(append(serving, apiServerKubeletClient), clientCerts...) {
		if _, err := ensureCert(dir, ca, spec); err != nil {
			return err
		}
	}
	if _, err := ensureCert(dir, fp, certSpec{file: "front-proxy-client", cn: frontProxyClientCN, client: true}); err != nil {
		return err
	}
	if err := ensureServiceAccountKey(dir); err != nil {
		return err
	}
	// Kueue's webhook server reads tls.crt/tls.key from a folder.
	webhookDir := filepath.Join(dir, "kueue-webhook")
	for _, d := range []string{webhookDir, kueueMetricsCertDir, kueueVisibilityCertDir} {
		if err := copyKeyPair(dir, "kueue-serving", d); errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("%w\nKueue reads its serving certificates from %s and %s; make them writable once: sudo install -d -o $USER %s %s",
				err, kueueMetricsCertDir, kueueVisibilityCertDir, kueueMetricsCertDir, kueueVisibilityCertDir)
		} else if err != nil {
			return err
		}
	}
	return nil
}

func ensureCA(dir, file, cn string) (keyPair, error) {
	if kp, err := loadKeyPair(dir, file); err == nil && kp.cert.IsCA && time.Until(kp.cert.NotAfter) > 24*time.Hour {
		return kp, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generate %s key: %w", file, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return keyPair{}, fmt.Errorf("sign %s: %w", file, err)
	}
	cert, _ := x509.ParseCertificate(der)
	kp := keyPair{cert: cert, key: key}
	if err := writeKeyPair(dir, file, kp); err != nil {
		return keyPair{}, err
	}
	return kp, nil
}

func ensureCert(dir string, ca keyPair, spec certSpec) (keyPair, error) {
	if kp, err := loadKeyPair(dir, spec.file); err == nil && kp.cert.CheckSignatureFrom(ca.cert) == nil &&
		time.Until(kp.cert.NotAfter) > 24*time.Hour {
		return kp, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generate %s key: %w", spec.file, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: spec.cn, Organization: spec.orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		IPAddresses:  spec.ips,
		DNSNames:     spec.dns,
	}
	if spec.server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if spec.client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return keyPair{}, fmt.Errorf("sign %s: %w", spec.file, err)
	}
	cert, _ := x509.ParseCertificate(der)
	kp := keyPair{cert: cert, key: key}
	if err := writeKeyPair(dir, spec.file, kp); err != nil {
		return keyPair{}, err
	}
	return kp, nil
}

// ensureServiceAccountKey creates the RSA key pair that signs service
// account tokens (sa.key, sa.pub).
func ensureServiceAccountKey(dir string) error {
	keyPath, pubPath := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if _, err := os.Stat(keyPath); err == nil {
		if _, err := os.Stat(pubPath); err == nil {
			return nil
		}
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generate service account key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode service account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return fmt.Errorf("encode service account public key: %w", err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", keyPath, err)
	}
	if err := os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", pubPath, err)
	}
	return nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func loadKeyPair(dir, file string) (keyPair, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, file+".crt"))
	if err != nil {
		return keyPair{}, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, file+".key"))
	if err != nil {
		return keyPair{}, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return keyPair{}, errors.New("no PEM data")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return keyPair{}, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{cert: cert, key: key}, nil
}

func writeKeyPair(dir, file string, kp keyPair) error {
	ec, ok := kp.key.(*ecdsa.PrivateKey)
	if !ok {
		return fmt.Errorf("write %s: unexpected key type %T", file, kp.key)
	}
	der, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		return fmt.Errorf("encode %s key: %w", file, err)
	}
	if err := os.WriteFile(filepath.Join(dir, file+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("write %s key: %w", file, err)
	}
	if err := os.WriteFile(filepath.Join(dir, file+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kp.cert.Raw}), 0o644); err != nil {
		return fmt.Errorf("write %s certificate: %w", file, err)
	}
	return nil
}

// copyKeyPair writes <file>.crt/.key as tls.crt/tls.key into dst, only when
// they differ.
func copyKeyPair(dir, file, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	for src, name := range map[string]string{file + ".crt": "tls.crt", file + ".key": "tls.key"} {
		b, err := os.ReadFile(filepath.Join(dir, src))
		if err != nil {
			return fmt.Errorf("read %s: %w", src, err)
		}
		target := filepath.Join(dst, name)
		if old, err := os.ReadFile(target); err == nil && bytes.Equal(old, b) {
			continue
		}
		if err := os.WriteFile(target, b, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", target, err)
		}
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for the client certificate <file>.
func writeKubeconfig(l Layout, path, file string) error {
	ca, err := os.ReadFile(filepath.Join(l.PKI(), "ca.crt"))
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	crt, err := os.ReadFile(filepath.Join(l.PKI(), file+".crt"))
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	key, err := os.ReadFile(filepath.Join(l.PKI(), file+".key"))
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["gantry-dev"] = &clientcmdapi.Cluster{Server: APIServerURL(), CertificateAuthorityData: ca}
	cfg.AuthInfos[file] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	cfg.Contexts["gantry-dev"] = &clientcmdapi.Context{Cluster: "gantry-dev", AuthInfo: file}
	cfg.CurrentContext = "gantry-dev"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

func pkiComponent() component {
	return component{
		name:  "certificates",
		group: GroupCluster,
		healthy: func(ctx context.Context, s *Stack) error {
			ca, err := loadKeyPair(s.layout.PKI(), "ca")
			if err != nil {
				return fmt.Errorf("CA: %w", err)
			}
			for _, f := range []string{"apiserver", "kueue-serving", "kwok-serving", apiServerKubeletClient.file, "front-proxy-client", "admin"} {
				kp, err := loadKeyPair(s.layout.PKI(), f)
				if err != nil {
					return fmt.Errorf("certificate %s: %w", f, err)
				}
				if f != "front-proxy-client" && kp.cert.CheckSignatureFrom(ca.cert) != nil {
					return fmt.Errorf("certificate %s: not signed by the current CA", f)
				}
				if time.Until(kp.cert.NotAfter) < 24*time.Hour {
					return fmt.Errorf("certificate %s expires soon", f)
				}
			}
			for _, p := range []string{s.layout.Kubeconfig(), filepath.Join(kueueVisibilityCertDir, "tls.crt"), filepath.Join(kueueMetricsCertDir, "tls.crt")} {
				if _, err := os.Stat(p); err != nil {
					return err
				}
			}
			return nil
		},
		start: func(ctx context.Context, s *Stack) error {
			if err := ensurePKI(s.layout); err != nil {
				return err
			}
			if err := writeKubeconfig(s.layout, s.layout.Kubeconfig(), "admin"); err != nil {
				return err
			}
			for _, c := range clientCerts[1:] {
				if err := writeKubeconfig(s.layout, s.componentKubeconfig(c.file), c.file); err != nil {
					return err
				}
			}
			s.state.Kubeconfig = s.layout.Kubeconfig()
			return nil
		},
	}
}

// componentKubeconfig is the kubeconfig a control-plane component uses.
func (s *Stack) componentKubeconfig(name string) string {
	return filepath.Join(s.layout.Run(), name+".kubeconfig")
}
