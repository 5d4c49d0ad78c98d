// Command testagent is a stand-in agent for the kill -9 test: it runs one
// allocation of a job with a raw_exec task and a go_plugin task, prints the
// allocation ID once both have started, and waits to be killed.
//
//	testagent <data dir> <logmon binary> <testtask binary> <testplugin binary>
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
	"github.com/pluginhost/pluginhost/sdk"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "testagent:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 4 {
		return fmt.Errorf("want 4 arguments, got %d", len(args))
	}
	dataDir, logmonBin, taskBin, pluginBin := args[0], args[1], args[2], args[3]
	db, err := state.Open(filepath.Join(dataDir, "state.db"), state.Options{})
	if err != nil {
		return err
	}
	w, err := driver.NewWatcher()
	if err != nil {
		return err
	}
	drivers, err := driver.Builtin(w, &driver.GoPluginConfig{
		Handshake: sdk.Handshake(), PluginSets: sdk.HostPlugins(), Dispense: sdk.PluginCSI,
	}, driver.ExecOptions{Seccomp: true})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	started := map[string]bool{}
	ready := make(chan struct{})
	cfg := &taskrunner.Config{
		DataDir: dataDir, Store: db, Drivers: drivers, LogmonCommand: []string{logmonBin},
		OnEvent: func(_, task string, ev *state.TaskEvent) {
			if ev.Type != taskrunner.EventStarted {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			started[task] = true
			if len(started) == 2 {
				close(ready)
			}
		},
	}
	restart := &jobspec.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: 10 * time.Millisecond, Mode: jobspec.RestartModeFail}
	job := &jobspec.Job{ID: "k9", Name: "k9", Type: jobspec.JobTypeService, TaskGroups: []*jobspec.TaskGroup{{
		Name: "g", Count: 1, Restart: restart,
		Tasks: []*jobspec.Task{
			{Name: "raw", Driver: jobspec.DriverRawExec, Config: &jobspec.TaskConfig{Command: taskBin, Args: []string{"sleep"}}, KillTimeout: 5 * time.Second},
			{Name: "plugin", Driver: jobspec.DriverGoPlugin, Config: &jobspec.TaskConfig{Command: pluginBin}, KillTimeout: 5 * time.Second, KillSignal: "SIGTERM"},
		},
	}}}
	ar, err := taskrunner.NewAllocRunner(cfg, job, "g", 0)
	if err != nil {
		return err
	}
	ar.Run()
	select {
	case <-ready:
	case <-ar.Done():
		return fmt.Errorf("allocation ended: %+v", ar.State().Tasks)
	}
	fmt.Println(ar.ID())
	select {} // until SIGKILL
}
