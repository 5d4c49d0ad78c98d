//go:build !unix

package sdk

import "os"

// openLogFile opens the plugin's log file for appending, creating it.
func openLogFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
}
