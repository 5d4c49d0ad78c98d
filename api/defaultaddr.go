package api

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultSocketName is the API socket's name in the default directory.
const DefaultSocketName = "api.sock"

// rootLoginRuntimeDir is the XDG_RUNTIME_DIR pam_systemd gives root's login
// sessions. A root shell must find the agent that a systemd unit (which has
// no XDG_RUNTIME_DIR) started, so for root it counts as unset.
const rootLoginRuntimeDir = "/run/user/0"

// DefaultAddr returns the address the agent listens on when its config has
// no addr (also with -dev), and the one the CLI, api.NewClient("") and the
// examples look for when nothing else is given. It depends only on the
// caller's effective uid and XDG_RUNTIME_DIR, so an agent and a CLI of the
// same user in the same session agree without any configuration:
//
//   - $XDG_RUNTIME_DIR/pluginhost/api.sock when XDG_RUNTIME_DIR is set and
//     absolute: the per-user runtime dir, 0700 and on tmpfs, that systemd
//     makes for every login session (and that tests point elsewhere);
//   - /run/pluginhost/api.sock for root otherwise (also when
//     XDG_RUNTIME_DIR is root's login dir /run/user/0, so that a root shell
//     and an agent under systemd agree; sudo drops XDG_RUNTIME_DIR);
//   - /tmp/pluginhost-<uid>/api.sock for other users without a runtime
//     dir (cron, containers); that directory is checked to be theirs
//     before it is used, since anyone may create it first in /tmp.
//
// On Windows it is %LOCALAPPDATA%\pluginhost\api.sock (see
// windowsDefaultSocketPath).
//
// A second agent of the same user fails at start on this address, saying
// to set addr.
func DefaultAddr() (string, error) {
	p, err := DefaultSocketPath()
	if err != nil {
		return "", err
	}
	return "unix://" + p, nil
}

// DefaultSocketPath is DefaultAddr's socket path.
func DefaultSocketPath() (string, error) {
	return platformDefaultSocketPath()
}

func defaultSocketPath(getenv func(string) string, euid int) (string, error) {
	var dir string
	xdg := getenv("XDG_RUNTIME_DIR")
	switch {
	// The XDG base directory spec says to ignore a relative path.
	case xdg != "" && filepath.IsAbs(xdg) && !(euid == 0 && filepath.Clean(xdg) == rootLoginRuntimeDir):
		dir = filepath.Join(xdg, "pluginhost")
	case euid == 0:
		dir = "/run/pluginhost"
	default:
		dir = "/tmp/pluginhost-" + strconv.Itoa(euid)
	}
	p := filepath.Join(dir, DefaultSocketName)
	if len(p) > maxUnixPath {
		return "", fmt.Errorf("the default API socket %s is %d bytes, over the %d-byte limit of sun_path (XDG_RUNTIME_DIR is too long): set the agent's addr and %s", p, len(p), maxUnixPath, EnvAddr)
	}
	return p, nil
}

// windowsDefaultSocketPath is the default on Windows:
// %LOCALAPPDATA%\pluginhost\api.sock, a unix socket (Windows has had
// AF_UNIX since Windows 10 1803, and Go's net package speaks it). Not a
// loopback TCP port: a port is one per machine, so every user's client
// would find the first user's agent and need its token, where a socket in
// the profile is one per user and, as on Linux, its access rights are the
// authentication. LOCALAPPDATA rather than APPDATA because a socket must
// not roam with the profile. The profile is closed to other users (only
// the user, SYSTEM and Administrators may enter it), so nobody else can
// have made the directory first, the danger the unix rules check /tmp for.
//
// It is written with backslashes whatever the system, so that it can be
// tested on Linux, and is refused unless LOCALAPPDATA is a drive path (the
// XDG spec's rule for a relative runtime dir, and AF_UNIX does not reach
// network shares).
func windowsDefaultSocketPath(getenv func(string) string) (string, error) {
	base := getenv("LOCALAPPDATA")
	if !isWindowsDrivePath(base) {
		return "", fmt.Errorf("the default API socket is under %%LOCALAPPDATA%%, which is %q, not a drive path: set the agent's addr and %s", base, EnvAddr)
	}
	p := strings.TrimRight(strings.ReplaceAll(base, "/", `\`), `\`) + `\pluginhost\` + DefaultSocketName
	if len(p) > maxUnixPath {
		return "", fmt.Errorf("the default API socket %s is %d bytes, over the %d-byte limit of sun_path (LOCALAPPDATA is too long): set the agent's addr and %s", p, len(p), maxUnixPath, EnvAddr)
	}
	return p, nil
}

// isWindowsDrivePath: C:\ or C:/ and what follows.
func isWindowsDrivePath(p string) bool {
	return len(p) >= 3 && ('A' <= p[0] && p[0] <= 'Z' || 'a' <= p[0] && p[0] <= 'z') &&
		p[1] == ':' && (p[2] == '\\' || p[2] == '/')
}

// PrepareDefaultSocketDir creates the default socket's directory, 0700, and
// checks that it is a directory of the caller's that nobody else may write
// to: the socket's mode is the API's authentication, and whoever may write
// to its directory could put a socket of their own in its place. Search
// permission is harmless (the socket is 0600) and is allowed: root's
// /run/pluginhost is also the plugin socket root, which the agent makes
// 0711 for tasks with a user of their own.
func PrepareDefaultSocketDir() (string, error) {
	p, err := DefaultSocketPath()
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(p)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create the default API socket directory: %w", err)
	}
	if err := checkPrivateDir(dir, os.Geteuid()); err != nil {
		return "", err
	}
	return p, nil
}

// checkPrivateDir: dir is a real directory (not a symlink) that only uid
// may replace the socket in (checkDirOwner, by system).
func checkPrivateDir(dir string, uid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("default API socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("default API socket directory %s is not a directory (%s); remove it, or set addr", dir, fi.Mode().Type())
	}
	return checkDirOwner(dir, fi, uid)
}
