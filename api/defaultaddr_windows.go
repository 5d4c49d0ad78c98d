package api

import (
	"io/fs"
	"os"
)

func platformDefaultSocketPath() (string, error) {
	return windowsDefaultSocketPath(os.Getenv)
}

// checkDirOwner has nothing to check on Windows: the default directory is
// in the user's profile, which other users cannot enter (see
// windowsDefaultSocketPath), and Windows has no uid or mode bits to read;
// checkPrivateDir has already refused a link or junction in its place.
func checkDirOwner(string, fs.FileInfo, int) error { return nil }
