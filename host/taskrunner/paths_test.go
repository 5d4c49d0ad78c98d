package taskrunner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
)

func TestCheckPathElem(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "a/b", "../x", "/abs", "a\x00b"} {
		if err := CheckPathElem("task name", bad); err == nil || !strings.Contains(err.Error(), "task name") {
			t.Errorf("CheckPathElem(%q) = %v, want an error naming the kind", bad, err)
		}
	}
	for _, good := range []string{"web", "a.b", "...", "a b", "-x"} {
		if err := CheckPathElem("task name", good); err != nil {
			t.Errorf("CheckPathElem(%q) = %v", good, err)
		}
	}
}

// TestNewAllocRunnerRefusesEscapingNames builds runners straight from
// records, as a restore from a store that never went through the job parser
// would: nothing may be named outside the data dir.
func TestNewAllocRunnerRefusesEscapingNames(t *testing.T) {
	parent := t.TempDir()
	dataDir := filepath.Join(parent, "data")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{DataDir: dataDir, SocketRoot: filepath.Join(os.TempDir(), "s"), Logger: hclog.NewNullLogger()}
	job := func(task string) *jobspec.Job {
		j := &jobspec.Job{ID: "j", TaskGroups: []*jobspec.TaskGroup{{Name: "g",
			Tasks: []*jobspec.Task{{Name: task, Driver: jobspec.DriverRawExec, Config: &jobspec.TaskConfig{Command: "x"}}}}}}
		jobspec.Canonicalize(j)
		return j
	}
	cases := []struct{ allocID, task, want string }{
		{"../../escape", "t", "allocation ID"},
		{"..", "t", "allocation ID"},
		{"", "t", "allocation ID"},
		{"a1", "../../../escape", "task name"},
		{"a1", "..", "task name"},
		{"a1", "x/y", "task name"},
	}
	for _, c := range cases {
		a := &state.Alloc{ID: c.allocID, TaskGroup: "g", Job: job(c.task)}
		ar, err := newAllocRunner(cfg, a, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("alloc %q task %q: runner %v, err %v; want an error about the %s", c.allocID, c.task, ar, err, c.want)
		}
	}
	a := &state.Alloc{ID: "a1", TaskGroup: "g", Job: job("t")}
	ar, err := newAllocRunner(cfg, a, nil)
	if err != nil {
		t.Fatalf("a safe allocation was refused: %v", err)
	}
	if want := filepath.Join(dataDir, "alloc", "a1"); ar.AllocDir() != want {
		t.Errorf("AllocDir = %q, want %q", ar.AllocDir(), want)
	}
	entries, err := os.ReadDir(parent)
	if err != nil || len(entries) != 1 || entries[0].Name() != "data" {
		t.Errorf("the data dir's parent holds %v (%v); want only data", entries, err)
	}
}
