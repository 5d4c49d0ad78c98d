package sdk

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MaxSocketPath is the longest unix socket path Linux accepts (sun_path is
// 108 bytes including the terminating NUL). Longer paths fail at bind with an
// error that names neither the path nor the limit, so they are refused early.
const MaxSocketPath = 107

// EndpointFlag registers --endpoint on the author's FlagSet, defaulting to
// $CSI_ENDPOINT, so that drivers which are launched with
// `--endpoint=${CSI_ENDPOINT}` and ones that only see the environment both
// work. Pass the result's value as Config.Endpoint.
func EndpointFlag(fs *flag.FlagSet) *string {
	return fs.String("endpoint", os.Getenv(EnvCSIEndpoint),
		"CSI endpoint to listen on when run standalone (unix:///path/csi.sock); default $"+EnvCSIEndpoint)
}

// ParseEndpoint turns a CSI endpoint into a unix socket path. It accepts
// "unix:///abs/path.sock" (the CSI convention), "unix:/abs/path.sock",
// "unix://rel/path.sock" and a bare path (on Windows also
// "unix://C:\path\csi.sock" and "C:\path\csi.sock").
func ParseEndpoint(endpoint string) (string, error) {
	ep := strings.TrimSpace(endpoint)
	if ep == "" {
		return "", fmt.Errorf("sdk: empty CSI endpoint: pass --endpoint or set %s", EnvCSIEndpoint)
	}
	path := ep
	// filepath.IsAbs first: on Windows "C:\csi.sock" is a path, not
	// scheme "C".
	if scheme, rest, ok := strings.Cut(ep, ":"); ok && !strings.Contains(scheme, "/") && !filepath.IsAbs(ep) {
		if scheme != "unix" {
			return "", fmt.Errorf("sdk: CSI endpoint %q: only unix sockets are supported", endpoint)
		}
		path = rest
		if strings.HasPrefix(path, "//") {
			path = path[2:]
		}
	}
	if path == "" {
		return "", fmt.Errorf("sdk: CSI endpoint %q has no path", endpoint)
	}
	if len(path) > MaxSocketPath {
		return "", fmt.Errorf("sdk: CSI endpoint %q: socket path is %d bytes, the limit is %d",
			endpoint, len(path), MaxSocketPath)
	}
	return path, nil
}
