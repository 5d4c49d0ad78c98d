// Command tlsplugin is a go-plugin gRPC plugin that serves TLS only (its
// ServeConfig has a TLSProvider), as a plugin written for a host with
// AutoMTLS or its own certificates does. pluginhost must refuse it with an
// error that says why instead of registering a socket nobody can use.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

type connPlugin struct{ plugin.NetRPCUnsupportedPlugin }

func (connPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return nil }
func (connPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return c, nil
}

func selfSigned() (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}, nil
}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: plugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "TLS_PLUGIN", MagicCookieValue: "yes"},
		Plugins:         plugin.PluginSet{"tls": connPlugin{}},
		TLSProvider:     selfSigned,
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
