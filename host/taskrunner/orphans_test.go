package taskrunner

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

// TestRestoreKillsUntrackedCopy: an agent died between launching a task
// and recording its handle. The next agent must kill that copy (and its
// group) before launching the task again: one copy, not two.
func TestRestoreKillsUntrackedCopy(t *testing.T) {
	a := newAgent(t, "")
	job := testJob(jobspec.JobTypeService, rawTask("web", "sleep"))
	// Recorded (Received, pending) but never run by this incarnation.
	ar, err := NewAllocRunner(a.Cfg, job, job.TaskGroups[0].Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	orphan := exec.Command(testTask, "sleep")
	orphan.Env = []string{"NOMAD_ALLOC_ID=" + ar.ID(), "NOMAD_TASK_NAME=web", "PATH=/usr/bin:/bin"}
	orphan.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := orphan.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-orphan.Process.Pid, syscall.SIGKILL) })
	// The task prints once it is up; after that its environment is the
	// exec'd one.
	if _, err := out.Read(make([]byte, 1)); err != nil {
		t.Fatalf("orphan did not start: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- orphan.Wait() }()
	// A bystander of another allocation must survive.
	other := exec.Command(testTask, "sleep")
	other.Env = []string{"NOMAD_ALLOC_ID=someone-else", "NOMAD_TASK_NAME=web"}
	other.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })

	b := a.restart()
	b.Events.Wait(t, "web", EventUntrackedKilled, 1)
	b.Events.Wait(t, "web", EventStarted, 1)
	err = <-exited
	ws, ok := orphan.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("orphan ended with %v, want SIGKILL", err)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("a process of another allocation was killed: %v", err)
	}
	h := handle(t, b.Runners[0], "web")
	if h.Pid == orphan.Process.Pid {
		t.Fatal("the orphan's pid is recorded as the task")
	}
}
