package taskrunner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

// The shared alloc/ is open to every task's user, but a task cannot move
// aside or replace what it does not own there: alloc/logs, where the
// agent's log shipper writes as root, cannot become a symlink to a
// directory of the host's.
func TestUserHookSharedDirSticky(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving directories to a user needs root")
	}
	data := t.TempDir()
	// The parents of data_dir are the operator's to open (t.TempDir's is
	// 0700).
	if err := os.Chmod(filepath.Dir(data), 0o711); err != nil {
		t.Fatal(err)
	}
	alloc := filepath.Join(data, "alloc", "a1")
	req := &HookRequest{
		Task:     &jobspec.Task{Name: "web", Driver: jobspec.DriverExec},
		AllocDir: alloc, SharedDir: filepath.Join(alloc, "alloc"), LogDir: filepath.Join(alloc, "alloc", "logs"),
		TaskDir: filepath.Join(alloc, "web"), LocalDir: filepath.Join(alloc, "web", "local"),
		SecretsDir: filepath.Join(alloc, "web", "secrets"),
	}
	if err := (taskDirHook{}).Prestart(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if err := (&userHook{cfg: &Config{DataDir: data}}).Prestart(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if req.User == nil || req.User.Name != DefaultExecUser {
		t.Fatalf("user %+v, want %s", req.User, DefaultExecUser)
	}
	fi, err := os.Stat(req.SharedDir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o777 || fi.Mode()&os.ModeSticky == 0 {
		t.Fatalf("alloc/ mode %v, want drwxrwxrwt", fi.Mode())
	}
	mv := exec.Command("/bin/mv", req.LogDir, req.LogDir+".old")
	mv.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: req.User.UID, Gid: req.User.GID}}
	if out, err := mv.CombinedOutput(); err == nil {
		t.Fatalf("%s moved the agent's alloc/logs aside:\n%s", req.User.Name, out)
	}
	touch := exec.Command("/bin/touch", filepath.Join(req.SharedDir, "shared-file"))
	touch.SysProcAttr = mv.SysProcAttr
	if out, err := touch.CombinedOutput(); err != nil {
		t.Fatalf("%s cannot create a file in alloc/: %v\n%s", req.User.Name, err, out)
	}
}
