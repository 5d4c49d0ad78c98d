package allocdir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReach: a user passes a directory by its class's x bit (owner, else
// group, else others), the first directory that stops it is named with
// its mode and owner, and a symlinked data dir is judged by where it
// leads.
func TestReach(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{root, filepath.Dir(root)} {
		if err := os.Chmod(d, 0o755); err != nil && d == root {
			t.Fatal(err)
		}
	}
	closed := filepath.Join(root, "closed")
	data := filepath.Join(closed, "data")
	if err := os.MkdirAll(filepath.Join(data, AllocsDir), 0o711); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	const uid, gid = 4242, 4343
	for _, tc := range []struct {
		name  string
		mode  os.FileMode
		owner [2]int
		gids  []uint32
		ok    bool
	}{
		{"others may pass", 0o701, [2]int{0, 0}, nil, true},
		{"others may not", 0o700, [2]int{0, 0}, nil, false},
		{"the group may, the user is in it", 0o710, [2]int{0, gid}, []uint32{gid}, true},
		{"the group may, the user is not in it", 0o710, [2]int{0, gid}, nil, false},
		{"the group class decides, not others", 0o701, [2]int{0, gid}, []uint32{gid}, false},
		{"the owner class decides, not others", 0o011, [2]int{uid, 0}, nil, false},
		{"the owner may", 0o100, [2]int{uid, 0}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.Chown(closed, tc.owner[0], tc.owner[1]); err != nil {
				t.Skipf("chown needs root: %v", err)
			}
			if err := os.Chmod(closed, tc.mode); err != nil {
				t.Fatal(err)
			}
			for _, dir := range []string{data, link} {
				err := Reach(dir, uid, tc.gids)
				if tc.ok != (err == nil) {
					t.Fatalf("Reach(%s) = %v, want ok %v", dir, err, tc.ok)
				}
				var ue *UnreachableError
				if err != nil && (!errors.As(err, &ue) || ue.Dir != closed || !strings.Contains(err.Error(), closed+" is d")) {
					t.Fatalf("Reach(%s) = %v, want %s named", dir, err, closed)
				}
			}
		})
	}
	if err := Reach(data, 0, nil); err != nil {
		t.Fatalf("root is stopped by nothing: %v", err)
	}
}
