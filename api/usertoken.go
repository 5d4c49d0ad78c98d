package api

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	"strings"
)

// An agent listening on TCP leaves its management token for its own user,
// one file per listening address, so that this user's CLI and Go clients
// find it without a flag and nobody else can read it:
//
//	$XDG_CONFIG_HOME/pluginhost/tokens/127.0.0.1:4646   (0600, directory 0700)
//
// ($HOME/.config when XDG_CONFIG_HOME is unset, as os.UserConfigDir). One
// file per address, because many agents may run on one machine at once.

// UserTokenPaths returns the per-user token files a client of addr (a TCP
// address, as ParseAddr reads it) looks in, in order: one for a literal
// loopback IP, two for "localhost" (127.0.0.1, then ::1), which is where the
// agent listening on it would have written it.
func UserTokenPaths(addr string) ([]string, error) {
	a, err := ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	if a.Network != "tcp" {
		return nil, fmt.Errorf("%s: only TCP addresses have token files (the unix socket needs no token)", addr)
	}
	dir, err := UserTokenDir()
	if err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(a.Address)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	var hosts []string
	if strings.EqualFold(host, "localhost") {
		hosts = []string{"127.0.0.1", "::1"}
	} else {
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
		hosts = []string{ip.Unmap().WithZone("").String()}
	}
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		out = append(out, filepath.Join(dir, net.JoinHostPort(h, port)))
	}
	return out, nil
}

// UserTokenPath is the file an agent bound to addr (a loopback IP and port,
// as Server.Addr reports it) publishes its management token in.
func UserTokenPath(addr string) (string, error) {
	paths, err := UserTokenPaths(addr)
	if err != nil {
		return "", err
	}
	return paths[0], nil
}

// UserTokenDir is the directory of the per-user token files:
// <config dir>/pluginhost/tokens, where the config dir is $XDG_CONFIG_HOME
// or $HOME/.config. A root process started by sudo (SUDO_USER set) uses
// root's home from the password database instead: sudo may have kept the
// invoking user's HOME, and a root-owned file there would help nobody (the
// user could not read it) while handing that user's home a root-owned
// directory. The token of an agent running as root is root's.
func UserTokenDir() (string, error) {
	if os.Geteuid() == 0 && os.Getenv("SUDO_USER") != "" {
		u, err := user.LookupId("0")
		if err != nil {
			return "", fmt.Errorf("token dir: root's home: %w", err)
		}
		if u.HomeDir == "" {
			return "", errors.New("token dir: root has no home directory")
		}
		return filepath.Join(u.HomeDir, ".config", "pluginhost", "tokens"), nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("token dir: %w", err)
	}
	return filepath.Join(dir, "pluginhost", "tokens"), nil
}

// readTokenSecret reads a token file written by Publish (or by hand): its
// first line, trimmed; "" if there is none.
func readTokenSecret(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxTokenFileBytes))
	if err != nil {
		return "", fmt.Errorf("read token file %s: %w", path, err)
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	return strings.TrimSpace(line), nil
}

// maxTokenFileBytes bounds what readTokenSecret reads: the longest token
// an agent accepts (512 bytes, host/apiserver's maxTokenLen) with room for a
// newline and stray whitespace.
const maxTokenFileBytes = 512 + 64
