//go:build unix

package sdktest

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkPrivateDir: dir is a directory of this user's that nobody else may
// write to.
func checkPrivateDir(dir string, fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is not a directory of uid %d that only it may write to (%v); remove it", dir, os.Geteuid(), fi.Mode())
	}
	return nil
}
