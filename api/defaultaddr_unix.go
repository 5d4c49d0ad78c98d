//go:build unix

package api

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

func platformDefaultSocketPath() (string, error) {
	return defaultSocketPath(os.Getenv, os.Geteuid())
}

// checkDirOwner: dir belongs to uid and neither its group nor others may
// write to it.
func checkDirOwner(dir string, fi fs.FileInfo, uid int) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("default API socket directory %s: no owner information", dir)
	}
	if int(st.Uid) != uid {
		return fmt.Errorf("default API socket directory %s belongs to uid %d, not to uid %d: someone else made it; remove it, or set addr", dir, st.Uid, uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("default API socket directory %s has mode %04o: others may write to it and replace the socket; chmod go-w it, or set addr", dir, fi.Mode().Perm())
	}
	return nil
}
