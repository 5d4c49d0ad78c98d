package api

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
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
	return defaultSocketPath(os.Getenv, os.Geteuid())
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

// checkPrivateDir: dir is a real directory (not a symlink) owned by uid
// that neither its group nor others may write to.
func checkPrivateDir(dir string, uid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("default API socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("default API socket directory %s is not a directory (%s); remove it, or set addr", dir, fi.Mode().Type())
	}
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
