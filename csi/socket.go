package csi

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/pluginhost/pluginhost/dynamic"
)

// ErrSocketPathTooLong is wrapped by the error of a socket path over
// dynamic.MaxSocketPathLen.
var ErrSocketPathTooLong = errors.New("unix socket path too long")

// SocketPath turns a CSI endpoint into the socket path to dial. It accepts
// the CSI_ENDPOINT forms "unix:///abs/path" and "unix:/abs/path" as well as a
// bare path, and checks the result against the sun_path limit.
func SocketPath(endpoint string) (string, error) {
	p := endpoint
	switch {
	case strings.HasPrefix(p, "unix://"):
		p = strings.TrimPrefix(p, "unix://")
	case strings.HasPrefix(p, "unix:"):
		p = strings.TrimPrefix(p, "unix:")
	case strings.Contains(p, "://"):
		return "", fmt.Errorf("csi endpoint %q: only unix sockets are supported", endpoint)
	}
	if p == "" {
		return "", fmt.Errorf("csi endpoint %q: empty socket path", endpoint)
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("csi endpoint %q: socket path contains a NUL byte", endpoint)
	}
	if limit := dynamic.MaxSocketPathLen; len(p) > limit {
		return "", fmt.Errorf("csi socket %q is %d bytes, over the %d-byte limit of %s unix socket paths (use a shorter data dir): %w",
			p, len(p), limit, runtime.GOOS, ErrSocketPathTooLong)
	}
	return p, nil
}
