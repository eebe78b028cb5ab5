// Command clustercerts writes what the local control plane of deploy/cluster needs to
// authenticate: a CA, the API server's serving certificate, one client certificate and
// kubeconfig per component (and one for the user, in system:masters), and the key pair
// that signs service account tokens. Everything is new on every run (ECDSA P-256, valid
// for 30 days); nothing is read from or written to anywhere but -dir.
//
//	clustercerts -dir .cache/cluster/pki -server https://127.0.0.1:26443
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// client is one identity that talks to the API server.
type client struct {
	file, user string
	groups     []string
}

var clients = []client{
	// The user's (and the tests') kubeconfig: cluster admin.
	{"admin", "kubernetes-admin", []string{"system:masters"}},
	// The components, with the identities their bootstrap RBAC roles are bound to.
	{"kube-controller-manager", "system:kube-controller-manager", nil},
	{"kube-scheduler", "system:kube-scheduler", nil},
	// kwok patches node and pod status, leases and Services: it acts as the kubelet and
	// the cloud provider of every fake node.
	{"kwok", "kwok-controller", []string{"system:masters"}},
}

func main() {
	dir := flag.String("dir", "", "directory to write into (created)")
	server := flag.String("server", "https://127.0.0.1:26443", "the API server's URL, for the kubeconfigs")
	serviceIP := flag.String("service-ip", "10.96.0.1", "the kubernetes Service's cluster IP (first of the service range)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "clustercerts: -dir is required")
		os.Exit(2)
	}
	if err := run(*dir, *server, net.ParseIP(*serviceIP)); err != nil {
		fmt.Fprintln(os.Stderr, "clustercerts:", err)
		os.Exit(1)
	}
}

func run(dir, server string, serviceIP net.IP) error {
	if serviceIP == nil {
		return fmt.Errorf("-service-ip is not an IP address")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	now := time.Now().Add(-time.Hour)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "customer-api local cluster CA"},
		NotBefore:             now,
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writeCert(dir, "ca", caDER, caKey); err != nil {
		return err
	}

	issue := func(name string, tmpl *x509.Certificate) ([]byte, *ecdsa.PrivateKey, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl.SerialNumber = serial()
		tmpl.NotBefore, tmpl.NotAfter = now, now.Add(30*24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		return der, key, writeCert(dir, name, der, key)
	}

	// The API server's serving certificate: its loopback address, and the names and IP
	// pods would use for the kubernetes Service.
	if _, _, err := issue("apiserver", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), serviceIP},
	}); err != nil {
		return err
	}
	// kube-controller-manager, kube-scheduler and kwok serve their health endpoints over
	// TLS on loopback with this one.
	if _, _, err := issue("components-serving", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "local components"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}); err != nil {
		return err
	}
	for _, c := range clients {
		der, key, err := issue(c.file, &x509.Certificate{
			Subject:     pkix.Name{CommonName: c.user, Organization: c.groups},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		})
		if err != nil {
			return err
		}
		if err := writeKubeconfig(dir, c, server, caDER, der, key); err != nil {
			return err
		}
	}

	// Service account tokens: the API server signs with sa.key and verifies with sa.pub;
	// the controller manager signs the legacy token Secrets with sa.key.
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "sa.key"), "EC PRIVATE KEY", keyDER, 0o600); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pubDER, 0o644)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err)
	}
	return n
}

func writeCert(dir, name string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", der, 0o644); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, name+".key"), "EC PRIVATE KEY", keyDER, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}

// writeKubeconfig writes <file>.kubeconfig with the CA, the client certificate and its
// key embedded, in one context named customer-api-local.
func writeKubeconfig(dir string, c client, server string, caDER, certDER []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	b64 := func(typ string, der []byte) string {
		return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	const name = "customer-api-local"
	doc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: %[2]s
    certificate-authority-data: %[3]s
users:
- name: %[4]s
  user:
    client-certificate-data: %[5]s
    client-key-data: %[6]s
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: %[4]s
current-context: %[1]s
`, name, server, b64("CERTIFICATE", caDER), c.user, b64("CERTIFICATE", certDER), b64("EC PRIVATE KEY", keyDER))
	return os.WriteFile(filepath.Join(dir, c.file+".kubeconfig"), []byte(doc), 0o600)
}
