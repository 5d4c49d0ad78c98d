//go:build !linux || portable

package sdk

import "os"

// stdioWriter is what stdout and stderr are replaced with under a host.
// The "portable" tag selects this on Linux too, so that our tests run the
// code macOS and Windows run.
func stdioWriter(f *os.File) (*os.File, bool, error) { return keepStdio(f) }
