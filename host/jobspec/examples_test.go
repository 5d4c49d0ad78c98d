package jobspec

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// examplesDir holds the job files shipped as documentation; every one must
// parse, or the docs lie.
const examplesDir = "../../examples"

func exampleFiles(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.hcl"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(files) < 4 {
		tb.Fatalf("want at least 4 example job files in %s, found %d", examplesDir, len(files))
	}
	return files
}

func TestExamplesParse(t *testing.T) {
	for _, f := range exampleFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			job, err := ParseFile(f)
			if err != nil {
				t.Fatalf("example does not parse:\n%v", err)
			}
			abs, _ := filepath.Abs(f)
			if job.SourcePath != abs {
				t.Errorf("SourcePath = %q, want %q", job.SourcePath, abs)
			}
		})
	}
}

func TestExampleDemoIsMockCSIMonolith(t *testing.T) {
	job, err := ParseFile(filepath.Join(examplesDir, "demo.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	task := job.TaskGroups[0].Tasks[0]
	if task.Driver != DriverGoPlugin || task.Config.Command != "mockcsi" {
		t.Errorf("demo task = driver %q command %q, want go_plugin mockcsi", task.Driver, task.Config.Command)
	}
	p := task.CSIPluginConfig
	if p == nil || p.ID != "mockcsi" || p.Type != CSIPluginTypeMonolith {
		t.Fatalf("demo csi_plugin = %+v, want id mockcsi type monolith", p)
	}
}

func TestExampleRawExecPassesEndpoint(t *testing.T) {
	job, err := ParseFile(filepath.Join(examplesDir, "mockcsi-raw-exec.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	task := job.TaskGroups[0].Tasks[0]
	if task.Driver != DriverRawExec {
		t.Errorf("driver = %q, want raw_exec", task.Driver)
	}
	vars := map[string]string{VarCSIEndpoint: "unix:///run/x/csi.sock"}
	found := false
	for _, a := range task.Config.Args {
		if Interpolate(a, vars) == "--endpoint=unix:///run/x/csi.sock" {
			found = true
		}
	}
	if !found {
		t.Errorf("args %q do not pass --endpoint=${CSI_ENDPOINT}", task.Config.Args)
	}
}

// TestExamplePluginStateOutlivesAllocation: the mockcsi examples keep
// their state where the next allocation of the same job finds it (an
// update starts a new allocation; a state dir under NOMAD_TASK_DIR starts
// empty while every volume the plugin made is still registered), the same
// directory under pluginhost's layout and Nomad's.
func TestExamplePluginStateOutlivesAllocation(t *testing.T) {
	for _, name := range []string{"demo.hcl", "mockcsi-raw-exec.hcl"} {
		job, err := ParseFile(filepath.Join(examplesDir, name))
		if err != nil {
			t.Fatal(err)
		}
		task := job.TaskGroups[0].Tasks[0]
		dirs := map[string]bool{}
		for _, alloc := range []string{"a1", "a2"} {
			vars := map[string]string{
				VarAllocDir: "/data/alloc/" + alloc + "/alloc",
				VarTaskDir:  "/data/alloc/" + alloc + "/" + task.Name + "/local",
			}
			for _, a := range task.Config.Args {
				if dir, ok := strings.CutPrefix(Interpolate(a, vars), "--state-dir="); ok {
					dirs[filepath.Clean(dir)] = true
				}
			}
		}
		if len(dirs) != 1 {
			t.Fatalf("%s: state dirs %v, want one for both allocations", name, dirs)
		}
		for d := range dirs {
			if !strings.HasPrefix(d, "/data/") || strings.HasPrefix(d, "/data/alloc/") {
				t.Errorf("%s: state dir %s, want one in the agent's data dir outside the allocations", name, d)
			}
		}
	}
}

func TestParseFileErrors(t *testing.T) {
	if _, err := ParseFile(filepath.Join(t.TempDir(), "missing.hcl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want a wrapped not-exist error", err)
	}
	if _, err := ParseFile(t.TempDir()); err == nil {
		t.Error("directory: want an error")
	}
	big := filepath.Join(t.TempDir(), "big.hcl")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseFile(big); err == nil {
		t.Error("oversized file: want an error")
	}
}
