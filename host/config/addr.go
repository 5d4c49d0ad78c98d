package config

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
)

const unixScheme = "unix://"

// parseAddr turns an `addr` value into a listen network and address.
//
// TCP is limited to loopback: the API starts and stops processes as the
// agent's user (root, for CSI mounts) over plain HTTP, so its tokens must not
// cross a network. A unix socket is the default because file permissions
// then decide who may talk to the agent, with no token to keep.
func parseAddr(s string) (network, address string, err error) {
	if rest, ok := strings.CutPrefix(s, unixScheme); ok {
		if !filepath.IsAbs(rest) {
			return "", "", fmt.Errorf("%q: the socket path must be absolute, as in unix:///run/pluginhost.sock", s)
		}
		if err := checkSocketPath(rest); err != nil {
			return "", "", err
		}
		return "unix", filepath.Clean(rest), nil
	}
	if strings.Contains(s, "://") {
		return "", "", fmt.Errorf("%q: only unix:// URLs or host:port are supported", s)
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", "", fmt.Errorf("%q is neither unix:///path nor host:port: %w", s, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return "", "", fmt.Errorf("%q: port must be a number from 0 (any free port) to 65535", s)
	}
	if host != "localhost" {
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.IsLoopback() {
			return "", "", fmt.Errorf("%q: the API only listens on loopback (127.0.0.1, ::1, localhost) or a unix socket; it speaks plain HTTP, so its tokens must not cross a network", s)
		}
	}
	return "tcp", s, nil
}
