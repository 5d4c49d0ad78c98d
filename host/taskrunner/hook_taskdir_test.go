package taskrunner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pluginhost/pluginhost/host/allocdir"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/internal/beneath"
)

// Ids for these tests: the task's dynamic uid, its allocation's group, and
// a local user who is neither (a real uid, with no entry anywhere).
const (
	testTaskUID  = 80101
	testGroup    = 80100
	strangerUID  = 61234
	strangerGID  = 61234
	testAllocID  = "0b8c3c2a-1d5e-4c1b-9a7e-3f1a2b3c4d5e"
	testTaskName = "web"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("owners and modes need root")
	}
}

// layoutReq builds the hooks' request for one exec task with a dynamic uid
// under data.
func layoutReq(data string) *HookRequest {
	alloc := filepath.Join(data, "alloc", testAllocID)
	task := filepath.Join(alloc, testTaskName)
	return &HookRequest{
		AllocID: testAllocID, Task: &jobspec.Task{Name: testTaskName, Driver: jobspec.DriverExec},
		Owners: allocdir.Owners{Group: testGroup, Chown: true}, DynamicUID: testTaskUID,
		AllocDir: alloc, SharedDir: filepath.Join(alloc, "alloc"), LogDir: filepath.Join(alloc, "alloc", "logs"),
		TaskDir: task, LocalDir: filepath.Join(task, "local"), SecretsDir: filepath.Join(task, "secrets"),
	}
}

func prestartDirs(t *testing.T, data string, req *HookRequest) error {
	t.Helper()
	cfg := &Config{DataDir: data}
	if err := (&userHook{cfg: cfg}).Prestart(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	return (&taskDirHook{cfg: cfg}).Prestart(context.Background(), req)
}

// The modes and owners the README promises, each checked on disk.
func TestTaskDirLayout(t *testing.T) {
	needRoot(t)
	data := t.TempDir()
	req := layoutReq(data)
	if err := prestartDirs(t, data, req); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path     string
		uid, gid uint32
		mode     os.FileMode
	}{
		{filepath.Join(data, "alloc"), 0, 0, os.ModeDir | 0o711},
		{req.AllocDir, 0, testGroup, os.ModeDir | 0o710},
		{req.SharedDir, 0, testGroup, os.ModeDir | os.ModeSetgid | os.ModeSticky | 0o770},
		{req.LogDir, 0, testGroup, os.ModeDir | os.ModeSetgid | 0o750},
		{req.TaskDir, 0, testGroup, os.ModeDir | 0o750},
		{req.LocalDir, testTaskUID, testTaskUID, os.ModeDir | 0o700},
		{req.SecretsDir, testTaskUID, testTaskUID, os.ModeDir | 0o700},
	} {
		fi, err := os.Lstat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode() != c.mode || st.Uid != c.uid || st.Gid != c.gid {
			t.Errorf("%s: %v %d:%d, want %v %d:%d", c.path, fi.Mode(), st.Uid, st.Gid, c.mode, c.uid, c.gid)
		}
	}
}

// runAs runs a shell command as uid:gid with groups, and reports whether
// it succeeded.
func runAs(t *testing.T, uid, gid uint32, groups []uint32, script string) (string, bool) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: groups}}
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// Another local user gets nowhere in an allocation's tree, even knowing
// every path; the allocation's task reads the logs and writes the shared
// directory.
func TestTaskDirKeepsOthersOut(t *testing.T) {
	needRoot(t)
	data := t.TempDir()
	if err := os.Chmod(data, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(data), 0o711); err != nil {
		t.Fatal(err)
	}
	req := layoutReq(data)
	if err := prestartDirs(t, data, req); err != nil {
		t.Fatal(err)
	}
	logs, err := allocdir.OpenLogs(data, testAllocID)
	if err != nil {
		t.Fatal(err)
	}
	f, err := logs.OpenFile("web.stdout.0", os.O_WRONLY|os.O_CREATE, allocdir.LogFileMode(req.Owners))
	_ = logs.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("DB_PASSWORD=hunter2\n")
	_ = f.Close()
	log := filepath.Join(req.LogDir, "web.stdout.0")
	for _, try := range []string{
		"cat " + log, "ls " + req.AllocDir, "ls " + req.TaskDir, "touch " + req.SharedDir + "/x",
		"touch " + req.LocalDir + "/x", "ls " + req.SecretsDir,
	} {
		if out, ok := runAs(t, strangerUID, strangerGID, nil, try); ok {
			t.Errorf("another local user could %q:\n%s", try, out)
		}
	}
	task := []uint32{testGroup}
	for _, try := range []string{"cat " + log, "touch " + req.SharedDir + "/x", "touch " + req.LocalDir + "/y", "ls " + req.TaskDir} {
		if out, ok := runAs(t, testTaskUID, testTaskUID, task, try); !ok {
			t.Errorf("the task could not %q:\n%s", try, out)
		}
	}
	if out, ok := runAs(t, testTaskUID, testTaskUID, task, "echo x >> "+log); ok {
		t.Errorf("the task could write its log file:\n%s", out)
	}
	// Nor move the log directory aside to put a link in its place.
	if out, ok := runAs(t, testTaskUID, testTaskUID, task, "mv "+req.LogDir+" "+req.LogDir+".old"); ok {
		t.Errorf("the task moved alloc/logs aside:\n%s", out)
	}
	// A file the task makes in the shared dir is the allocation's group's.
	fi, err := os.Stat(filepath.Join(req.SharedDir, "x"))
	if err != nil || fi.Sys().(*syscall.Stat_t).Gid != testGroup {
		t.Fatalf("shared file: %v (%v), want group %d", fi, err, testGroup)
	}
}

// A task that replaced local/ or secrets/ (or its whole task dir's
// entries) with links to host directories while it ran gets a refusal
// naming the entry at its next launch, and the host directories keep
// their owner and mode.
func TestTaskDirRefusesPlantedLinks(t *testing.T) {
	needRoot(t)
	for _, entry := range []string{"local", "secrets", "alloc/logs", "alloc"} {
		t.Run(strings.ReplaceAll(entry, "/", "_"), func(t *testing.T) {
			data := t.TempDir()
			host := t.TempDir()
			if err := os.Chmod(host, 0o755); err != nil {
				t.Fatal(err)
			}
			req := layoutReq(data)
			if err := prestartDirs(t, data, req); err != nil {
				t.Fatal(err)
			}
			at := filepath.Join(req.TaskDir, entry)
			if strings.HasPrefix(entry, "alloc") {
				at = filepath.Join(req.AllocDir, entry)
			}
			if err := os.RemoveAll(at); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(host, at); err != nil {
				t.Fatal(err)
			}
			err := prestartDirs(t, data, req)
			var ue *beneath.UnsafeError
			if !errors.As(err, &ue) || ue.Path != at || !IsFatal(err) {
				t.Fatalf("second launch: %v, want a fatal refusal naming %s", err, at)
			}
			fi, err := os.Stat(host)
			if err != nil || fi.Mode() != os.ModeDir|0o755 || fi.Sys().(*syscall.Stat_t).Uid != 0 {
				t.Fatalf("host dir now %v (%v)", fi.Mode(), err)
			}
		})
	}
}

// A mode a task set on its own directories is set right at the next
// launch.
func TestTaskDirModesSetAgain(t *testing.T) {
	needRoot(t)
	data := t.TempDir()
	req := layoutReq(data)
	if err := prestartDirs(t, data, req); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{req.LocalDir, req.TaskDir, req.SharedDir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := prestartDirs(t, data, req); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(req.LocalDir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("local/ left %v", fi.Mode())
	}
	if fi, _ := os.Stat(req.SharedDir); fi.Mode() != os.ModeDir|os.ModeSetgid|os.ModeSticky|0o770 {
		t.Fatalf("alloc/ left %v", fi.Mode())
	}
}
