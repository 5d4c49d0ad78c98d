//go:build !unix

package sdktest

import (
	"fmt"
	"io/fs"
)

// checkPrivateDir: dir is a directory, not a link to one. Off unix the
// temporary dir is the user's own (on Windows %TEMP% is in the profile,
// which other users cannot enter), so there is no owner to compare, nor
// mode bits that would say.
func checkPrivateDir(dir string, fi fs.FileInfo) error {
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (%v); remove it", dir, fi.Mode())
	}
	return nil
}
