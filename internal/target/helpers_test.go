package target

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testCert is a self-signed certificate for 127.0.0.1 and localhost, written as PEM files.
type testCert struct {
	CAFile, CertFile, KeyFile string
	Server                    *tls.Config // serves the certificate
}

func newTestCert(t *testing.T) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "msgx test"},
		NotBefore:             time.Unix(0, 0),
		NotAfter:              time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	tc := testCert{
		CAFile:   filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, "cert.pem"),
		KeyFile:  filepath.Join(dir, "key.pem"),
	}
	for path, b := range map[string][]byte{tc.CAFile: certPEM, tc.CertFile: certPEM, tc.KeyFile: keyPEM} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tc.Server = &tls.Config{Certificates: []tls.Certificate{pair}}
	return tc
}

// closedAddr is a local address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// mustOpen opens a sink and closes it when the test ends.
func mustOpen(t *testing.T, name string, c Config) Sink {
	t.Helper()
	s, err := Open(context.Background(), name, c, t.TempDir())
	if err != nil {
		t.Fatalf("Open %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close %s: %v", name, err)
		}
	})
	return s
}

// records makes n records with event ids from first, keys cycling through keys.
func records(target string, first int64, n int, keys ...string) []Record {
	recs := make([]Record, n)
	for i := range recs {
		id := first + int64(i)
		key := ""
		if len(keys) > 0 {
			key = keys[i%len(keys)]
		}
		recs[i] = Record{
			EventID: id,
			MsgID:   1000 + id,
			TypeTag: "FLOP-CHOT",
			Target:  target,
			Kind:    "flop",
			Key:     key,
			Value:   fmt.Appendf(nil, `{"event_id":%d,"flid":%q}`, id, key),
		}
	}
	return recs
}
