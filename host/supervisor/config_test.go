package supervisor

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/taskrunner"
	"github.com/pluginhost/pluginhost/internal/beneath"
)

func putU32(b []byte, v uint32) { binary.NativeEndian.PutUint32(b, v) }

func TestNewHookConfig(t *testing.T) {
	reg, err := dynamic.New(dynamic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Shutdown)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MountRoot: "/x"}, "Registry"},
		{Config{Registry: reg}, "MountRoot"},
		{Config{Registry: reg, MountRoot: "rel/csi"}, "absolute"},
	} {
		if _, err := NewHook(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewHook(%+v) = %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	hooks, err := NewHook(Config{Registry: reg, MountRoot: "/data/csi"})
	if err != nil {
		t.Fatal(err)
	}
	plain := &taskrunner.HookRequest{AllocID: "a", Task: &jobspec.Task{Name: "web"}}
	if h := hooks(plain); len(h) != 0 {
		t.Errorf("a task without csi_plugin got hooks %v", h)
	}
	if h := hooks(nil); len(h) != 0 {
		t.Errorf("nil request got hooks %v", h)
	}
	withPlugin := &taskrunner.HookRequest{AllocID: "a", SocketDir: "/s", Task: &jobspec.Task{
		Name: "p", CSIPluginConfig: &jobspec.TaskCSIPluginConfig{ID: "x", Type: "node"}}}
	if h := hooks(withPlugin); len(h) != 1 || h[0].Name() != HookName {
		t.Errorf("csi_plugin task got hooks %v", h)
	}
}

// A csi_plugin block that escaped the parser (a hand-edited store, say) is
// refused with an error no restart can fix, never a panic or a path outside
// the mount root.
func TestInvalidPluginConfigIsFatal(t *testing.T) {
	reg, err := dynamic.New(dynamic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Shutdown)
	hooks, err := NewHook(Config{Registry: reg, MountRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []jobspec.TaskCSIPluginConfig{{ID: "", Type: "node"}, {ID: "../etc", Type: "node"}, {ID: "ok", Type: "sidecar"}} {
		req := &taskrunner.HookRequest{AllocID: "a", SocketDir: t.TempDir(), Task: &jobspec.Task{Name: "p", CSIPluginConfig: &p}}
		h := hooks(req)[0].(taskrunner.PrestartHook)
		if err := h.Prestart(t.Context(), req); !taskrunner.IsFatal(err) {
			t.Errorf("%+v: Prestart = %v, want a fatal error", p, err)
		}
	}
}

func TestHostStageDir(t *testing.T) {
	for _, tc := range []struct{ taskMount, taskBase, want string }{
		{"/csi", "/csi", "/data/csi/node/p"},
		{"/csi", "/csi/sp", "/data/csi/node/p/sp"},
		{"/csi/", "/csi/a/../b", "/data/csi/node/p/b"},
		{"/csi", "/local/csi", "/data/csi/node/p"},
		{"/csi", "/csix", "/data/csi/node/p"},
		{"", "", "/data/csi/node/p"},
	} {
		if got := hostStageDir("/data/csi/node/p", tc.taskMount, tc.taskBase); got != tc.want {
			t.Errorf("hostStageDir(%q, %q) = %q, want %q", tc.taskMount, tc.taskBase, got, tc.want)
		}
	}
}

// TestSupervisorLoggerNames: a supervisor logs under the kind of plugin it
// supervises, so a kv plugin's registration is not logged as csi_plugin.
func TestSupervisorLoggerNames(t *testing.T) {
	reg, err := dynamic.New(dynamic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Shutdown)
	hooks, err := NewHook(Config{Registry: reg, MountRoot: "/csi", Logger: hclog.New(&hclog.LoggerOptions{Name: "pluginhost", Output: io.Discard})})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		task *jobspec.Task
		want string
	}{
		{&jobspec.Task{Name: "c", Driver: jobspec.DriverGoPlugin, Config: &jobspec.TaskConfig{}, CSIPluginConfig: &jobspec.TaskCSIPluginConfig{ID: "x", Type: "node"}}, "pluginhost.csi_plugin"},
		{&jobspec.Task{Name: "k", Driver: jobspec.DriverGoPlugin, Config: &jobspec.TaskConfig{Plugin: &jobspec.GoPluginProvides{Type: "kv", Name: "main"}}}, "pluginhost.kv_plugin"},
	} {
		hs := hooks(&taskrunner.HookRequest{AllocID: "a", Task: tc.task, SocketDir: "/s"})
		if len(hs) != 1 {
			t.Fatalf("%s: %d hooks", tc.task.Name, len(hs))
		}
		if got := hs[0].(*supervisor).logger.Name(); got != tc.want {
			t.Errorf("%s: logger %q, want %q", tc.task.Name, got, tc.want)
		}
	}
}

// A plugin task writes in its mount directory: a link it left where the
// supervisor makes the staging directory is refused, never followed (the
// agent is root), and the mount root is made shared first.
func TestEnsureDirsRefusesPlantedLinks(t *testing.T) {
	dir := t.TempDir()
	host := t.TempDir()
	reg, err := dynamic.New(dynamic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Shutdown)
	ensured := 0
	cfg, err := Config{Registry: reg, MountRoot: filepath.Join(dir, "csi"), EnsureMountRoot: func() error { ensured++; return nil }}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	job := pluginJob("csi", jobspec.DriverRawExec, jobspec.CSIPluginTypeNode, nil)
	task := csiTask(job)
	task.CSIPluginConfig.MountDir = "/csi"
	task.CSIPluginConfig.StagePublishBaseDir = "/csi/stage"
	s := newSupervisor(&cfg, &taskrunner.HookRequest{AllocID: "a", Job: job, Group: job.TaskGroups[0], Task: task, SocketDir: dir}, cfg.Logger)
	if err := s.ensureDirs(); err != nil {
		t.Fatal(err)
	}
	if ensured != 1 {
		t.Fatalf("mount root ensured %d times", ensured)
	}
	if err := os.Remove(s.stageDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, s.stageDir); err != nil {
		t.Fatal(err)
	}
	if err := s.ensureDirs(); !errors.Is(err, beneath.ErrUnsafe) {
		t.Fatalf("ensureDirs over a planted link: %v", err)
	}
}
