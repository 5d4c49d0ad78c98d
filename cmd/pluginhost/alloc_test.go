package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/cli"

	"github.com/pluginhost/pluginhost/api"
)

func TestAllocStatus(t *testing.T) {
	fa, addr := startAgent(t)
	ctx := testCtx(t)
	runCLI(t, ctx, addr, "job", "run", "-detach", crashJob(t))

	r := runCLI(t, ctx, addr, "alloc", "status", "00000001")
	if r.code != 0 {
		t.Fatalf("alloc status: %+v", r)
	}
	for _, want := range []string{
		"ID                  = 00000001",
		"Name                = crashy.sleepers[0]",
		"Client Status       = failed",
		"Desired Description = <none>",
		`Task "sleep" is "dead"`,
		"Failed         = true",
		"Recent Events:\nTime                  Type        Description\n",
		"2026-11-22T03:00:04Z  Terminated  Exit Code: 1\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("alloc status lacks %q:\n%s", want, r.stdout)
		}
	}
	// Newest event first.
	if strings.Index(r.stdout, "Terminated") > strings.Index(r.stdout, "Received") {
		t.Errorf("events not newest first:\n%s", r.stdout)
	}

	r = runCLI(t, ctx, addr, "alloc", "status", "-json", "00000002")
	var a api.Allocation
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil || a.TaskStates["sleep"].Events[2].ExitCode != 1 {
		t.Errorf("alloc status -json: %v\n%s", err, r.stdout)
	}

	// An ambiguous prefix lists the candidates.
	r = runCLI(t, ctx, addr, "alloc", "status", "0000000")
	if r.code != 1 || !strings.Contains(r.stderr, "Matching IDs:") || !strings.Contains(r.stderr, "00000002-0000") {
		t.Errorf("ambiguous prefix: %+v", r)
	}
	if r := runCLI(t, ctx, addr, "alloc", "status", "ffff"); r.code != 1 || !strings.Contains(r.stderr, "HTTP 404") {
		t.Errorf("unknown alloc: %+v", r)
	}
	_ = fa
}

func TestAllocLogs(t *testing.T) {
	fa, addr := startAgent(t)
	ctx := testCtx(t)
	runCLI(t, ctx, addr, "job", "run", "-detach", exampleJob)
	id := "00000001-0000-4000-8000-000000000000"
	fa.mu.Lock()
	fa.logs[id+"/sleep/stdout"] = "no trailing newline"
	fa.logs[id+"/sleep/stderr"] = "oops\n"
	fa.mu.Unlock()

	// Raw bytes: no newline is added.
	if r := runCLI(t, ctx, addr, "alloc", "logs", "00000001"); r.code != 0 || r.stdout != "no trailing newline" {
		t.Errorf("alloc logs: %+v", r)
	}
	if r := runCLI(t, ctx, addr, "alloc", "logs", "-stderr", "00000001", "sleep"); r.code != 0 || r.stdout != "oops\n" {
		t.Errorf("alloc logs -stderr: %+v", r)
	}
	if r := runCLI(t, ctx, addr, "alloc", "logs", "00000001", "nosuch"); r.code != 1 || !strings.Contains(r.stderr, `no task "nosuch"`) {
		t.Errorf("unknown task: %+v", r)
	}

	// -f streams until interrupted, then exits 0.
	fctx, cancel := context.WithCancel(ctx)
	ui := cli.NewMockUi()
	out := &notifyWriter{wrote: make(chan string, 16)}
	done := make(chan int, 1)
	go func() {
		done <- runClock(fctx, []string{"alloc", "logs", "-f", "00000001"}, ui, out, ui.ErrorWriter,
			func(string) string { return addr }, time.Now)
	}()
	select {
	case got := <-out.wrote:
		if got != "no trailing newline" {
			t.Errorf("followed output = %q", got)
		}
	case <-ctx.Done():
		t.Fatal("followed log never arrived")
	}
	<-fa.following
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("alloc logs -f after interrupt: code %d, stderr %s", code, ui.ErrorWriter.String())
	}
}

// notifyWriter reports every write on a channel: the event a test waits on
// before it interrupts a stream.
type notifyWriter struct{ wrote chan string }

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.wrote <- string(p)
	return len(p), nil
}
