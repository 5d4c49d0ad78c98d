package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// mkdirAll makes dir, a staging path or a publish target's parent, as
// the CO does before NodeStage and NodePublish: beneath the mount root
// when there is one (VolumeManagerConfig.MountRoot), through no link.
func (vm *VolumeManager) mkdirAll(dir string) error {
	root, rel, ok := vm.underRoot(dir)
	if !ok {
		return os.MkdirAll(dir, 0o700)
	}
	d, err := beneath.Open(root)
	if err != nil {
		return err
	}
	defer d.Close()
	sub, err := d.MkdirAll(rel, 0o700)
	if err != nil {
		return err
	}
	return sub.Close()
}

// removeEmpty removes dir and then its parents up to (not including) stop,
// as long as they are empty: the paths the agent created for a mount go
// with it. A directory that is still a mount point or holds anything
// stays, which is what a leaked mount must do. Beneath the mount root a
// link on the way stops it: nothing is removed through one.
func (vm *VolumeManager) removeEmpty(dir, stop string) {
	root, _, ok := vm.underRoot(dir)
	var d *beneath.Dir
	if ok {
		var err error
		if d, err = beneath.Open(root); err != nil {
			return
		}
		defer d.Close()
	}
	for dir != stop && strings.HasPrefix(dir, stop+string(filepath.Separator)) {
		var err error
		if d != nil {
			rel, _ := filepath.Rel(root, dir)
			err = d.Remove(rel)
		} else {
			err = os.Remove(dir)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// underRoot returns the mount root and dir relative to it, if dir lies
// below it.
func (vm *VolumeManager) underRoot(dir string) (root, rel string, ok bool) {
	root = vm.cfg.MountRoot
	if root == "" {
		return "", "", false
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", "", false
	}
	return root, rel, true
}
