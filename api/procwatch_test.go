package api

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// envSleeper makes this test binary a process that only sleeps: a child to
// watch that exists on every system the package builds for.
const envSleeper = "PLUGINHOST_API_TEST_SLEEPER"

func TestMain(m *testing.M) {
	if os.Getenv(envSleeper) != "" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envSleeper+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// The process watch this build uses (a pidfd on Linux; with the portable
// tag, as on other unix systems, kill(pid, 0) every pollInterval; a process
// handle on Windows), through the runner go-plugin gets from ReattachFunc:
// Wait does not return while the plugin lives, returns within a bound once
// it has exited, and ends with its ctx; a process that is gone, or no pid
// at all, is refused.
func TestReattachFuncWatchesProcess(t *testing.T) {
	cmd := startSleeper(t)
	pid := cmd.Process.Pid
	rc := (&PluginReattach{Protocol: "grpc", ProtocolVersion: 1, Network: "unix", Addr: "/x.sock", Pid: pid}).ReattachConfig()
	r, err := rc.ReattachFunc()
	if err != nil {
		t.Fatal(err)
	}
	if r.ID() != strconv.Itoa(pid) {
		t.Fatalf("ID %q, want %d", r.ID(), pid)
	}
	if err := r.Kill(context.Background()); err == nil {
		t.Fatal("Kill of a hosted plugin did not refuse")
	}
	waited := make(chan error, 1)
	go func() { waited <- r.Wait(context.Background()) }()
	// Four polls (see pollInterval): a watch that takes a living process
	// for an exited one returns here.
	select {
	case err := <-waited:
		t.Fatalf("Wait returned (%v) while the process lives", err)
	case <-time.After(time.Second):
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// The test's child must be reaped to be gone; a hosted plugin is the
	// agent's child, which reaps it.
	_ = cmd.Wait()
	exited := time.Now()
	// A pidfd and a handle wake at once, the poll within an interval
	// (250 ms); the rest is slack for a loaded 2-core machine.
	const bound = 2 * time.Second
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		t.Logf("exit seen after %v", time.Since(exited))
	case <-time.After(bound):
		t.Fatalf("Wait did not return within %v of the exit", bound)
	}

	if _, err := rc.ReattachFunc(); !errors.Is(err, errProcessGone) {
		t.Fatalf("reattach to an exited process: %v, want errProcessGone", err)
	}
	for _, pid := range []int{0, -1} {
		if _, err := attachProcess(pid); !errors.Is(err, errProcessGone) {
			t.Fatalf("attach to pid %d: %v, want errProcessGone", pid, err)
		}
	}

	living := startSleeper(t)
	r, err = attachProcess(living.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { waited <- r.Wait(ctx) }()
	cancel()
	select {
	case err := <-waited:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait after ctx's end: %v", err)
		}
	case <-time.After(bound):
		t.Fatal("Wait did not end with its ctx")
	}
}
