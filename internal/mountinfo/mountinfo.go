// Package mountinfo reads /proc/<pid>/mountinfo: which paths are mount
// points in a process's mount namespace. The agent uses it for its shared
// CSI mount root; tests use it to see what a volume left mounted and to
// clean up after a failure.
package mountinfo

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Self is this process's mount table.
const Self = "/proc/self/mountinfo"

// Points returns the mount points listed in a mountinfo file (Self, or
// /proc/<pid>/mountinfo for another process's namespace), in file order.
func Points(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// Field 5 is the mount point.
		if fields := strings.Fields(sc.Text()); len(fields) > 4 {
			out = append(out, Unescape(fields[4]))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return out, nil
}

// IsSubtreeBind reports whether the topmost mount at path in this
// process's namespace shows a subdirectory of its file system (mountinfo's
// root field is not "/"): a bind mount of a directory, such as one of a
// directory onto itself, as opposed to a file system mounted there whole.
func IsSubtreeBind(path string) (bool, error) {
	f, err := os.Open(Self)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", Self, err)
	}
	defer f.Close()
	found, sub := false, false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// Field 4 is the root within the file system, field 5 the
		// mount point; later lines are mounted on top of earlier ones.
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && Unescape(fields[4]) == path {
			found, sub = true, Unescape(fields[3]) != "/"
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("read %s: %w", Self, err)
	}
	return found && sub, nil
}

// Unescape undoes mountinfo's octal escapes (\040 for a space, ...).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Under returns the mount points of file at or below dir, deepest first
// (the order to unmount them in).
func Under(file, dir string) ([]string, error) {
	all, err := Points(file)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, mp := range all {
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out, nil
}

// IsMountPoint reports whether path is a mount point in this process's
// namespace.
func IsMountPoint(path string) (bool, error) {
	all, err := Points(Self)
	if err != nil {
		return false, err
	}
	return slices.Contains(all, path), nil
}

// DetachUnder detaches every mount at or below dir in this process's
// namespace, deepest first (lazily: a process still using one keeps it
// until it lets go).
func DetachUnder(dir string) error {
	mps, err := Under(Self, dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, mp := range mps {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}
