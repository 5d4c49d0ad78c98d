package api

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
)

// EnvAddr is the environment variable the CLI reads the agent's address from.
const EnvAddr = "PLUGINHOST_ADDR"

// maxUnixPath is the usable length of sun_path on Linux (108 bytes minus the
// terminating NUL). Longer paths fail to bind or, worse, get truncated into
// dial timeouts (Nomad #24295), so they are refused up front. It is
// dynamic.MaxSocketPathLen, copied so that this package needs no server
// package; host/apiserver's TestAddrLimitMatchesDynamic keeps the two equal.
const maxUnixPath = 107

// Addr is a parsed API address.
type Addr struct {
	// Network is "unix" or "tcp".
	Network string
	// Address is a socket path for unix, host:port for tcp.
	Address string
}

// String renders a in the form ParseAddr accepts.
func (a Addr) String() string {
	if a.Network == "unix" {
		return "unix://" + a.Address
	}
	return a.Address
}

// ParseAddr parses an API address: "unix:///abs/path.sock", an absolute socket
// path (on Windows "unix://C:\path\api.sock" or "C:\path\api.sock"), or a
// loopback "host:port" (optionally prefixed "http://"). TCP is
// refused on anything but loopback because the API speaks plain HTTP: its
// tokens must not cross a network. On one machine a unix socket's file mode
// is the access control, and on loopback TCP the tokens are.
func ParseAddr(s string) (Addr, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return Addr{}, fmt.Errorf("address is empty")
	case strings.HasPrefix(s, "unix://"):
		return unixAddr(strings.TrimPrefix(s, "unix://"))
	case filepath.IsAbs(s): // "/..."; on Windows also "C:\..."
		return unixAddr(s)
	case strings.Contains(s, "://") && !strings.HasPrefix(s, "http://"):
		return Addr{}, fmt.Errorf("address %q: unsupported scheme (want unix:// or http://)", s)
	}
	hostport := strings.TrimSuffix(strings.TrimPrefix(s, "http://"), "/")
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return Addr{}, fmt.Errorf("address %q: %w", s, err)
	}
	if port == "" {
		return Addr{}, fmt.Errorf("address %q: missing port", s)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return Addr{}, fmt.Errorf("address %q: port %q is not a number from 0 to 65535", s, port)
	}
	if !isLoopback(host) {
		return Addr{}, fmt.Errorf("address %q: only loopback TCP addresses are allowed (the API speaks plain HTTP, so its tokens must not cross a network)", s)
	}
	return Addr{Network: "tcp", Address: hostport}, nil
}

func unixAddr(path string) (Addr, error) {
	if path == "" {
		return Addr{}, fmt.Errorf("unix address has no path")
	}
	if !filepath.IsAbs(path) {
		return Addr{}, fmt.Errorf("unix socket path %q is not absolute", path)
	}
	clean := filepath.Clean(path)
	// The whole address was trimmed; whitespace left at the path's ends
	// would not survive a round trip through String and ParseAddr.
	if strings.TrimSpace(clean) != clean {
		return Addr{}, fmt.Errorf("unix socket path %q has leading or trailing whitespace", path)
	}
	if len(clean) > maxUnixPath {
		return Addr{}, fmt.Errorf("unix socket path %q is %d bytes, over the %d-byte limit of sun_path", clean, len(clean), maxUnixPath)
	}
	return Addr{Network: "unix", Address: clean}, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
