//go:build !linux || portable

package sdk

import "os"

// chmodSocket gives the socket at path mode perm. Without Linux's O_PATH
// the name is followed: only Linux hosts run the agent, and a standalone
// plugin elsewhere keeps its endpoint in a directory of its own.
func chmodSocket(path string, perm os.FileMode) error { return os.Chmod(path, perm) }
