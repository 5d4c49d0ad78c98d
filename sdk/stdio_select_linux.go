//go:build !portable

package sdk

import "os"

// stdioWriter is what stdout and stderr are replaced with under a host.
func stdioWriter(f *os.File) (*os.File, bool, error) { return nonBlockingStdio(f) }
