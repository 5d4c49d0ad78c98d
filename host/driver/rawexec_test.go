package driver

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	"time"

	"github.com/pluginhost/pluginhost/internal/testproc"
)

func startRaw(t *testing.T, d *RawExec, args ...string) (Task, *bufio.Reader) {
	t.Helper()
	r, w := pipeFile(t)
	task, err := d.Start(context.Background(), &StartRequest{
		Command: testTask, Args: args, Env: []string{"PATH=/usr/bin:/bin"},
		Stdout: w, Stderr: w, WorkDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	killOnCleanup(t, task.Handle().Pid)
	t.Cleanup(task.Detach)
	return task, bufio.NewReader(r)
}

func TestRawExecExitCode(t *testing.T) {
	d := NewRawExec(newWatcher(t))
	task, _ := startRaw(t, d, "exit", "7")
	res := waitDone(t, task, 10*time.Second)
	if res.ExitCode != 7 || res.Signal != 0 || res.Unknown {
		t.Fatalf("result %+v, want exit code 7", res)
	}
}

func TestRawExecOwnSession(t *testing.T) {
	d := NewRawExec(newWatcher(t))
	task, out := startRaw(t, d, "sleep")
	if _, err := out.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	pid := task.Handle().Pid
	sid, err := unix.Getsid(pid)
	if err != nil {
		t.Fatal(err)
	}
	if sid != pid {
		t.Fatalf("task session %d, want its own (%d)", sid, pid)
	}
	if task.Handle().StartTime == 0 {
		t.Fatal("no start time recorded")
	}
}

func TestRawExecKillEscalatesAndReachesGroup(t *testing.T) {
	d := NewRawExec(newWatcher(t))
	task, out := startRaw(t, d, "child")
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	killOnCleanup(t, grandchild)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := task.Kill(ctx, syscall.SIGINT, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if res := task.Result(); res.Signal != int(syscall.SIGINT) {
		t.Fatalf("result %+v, want killed by SIGINT", res)
	}
	testproc.WaitGone(t, grandchild, 5*time.Second)
}

func TestRawExecKillTimeoutSendsSIGKILL(t *testing.T) {
	d := NewRawExec(newWatcher(t))
	task, out := startRaw(t, d, "ignore-int")
	if _, err := out.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := task.Kill(ctx, syscall.SIGINT, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if res := task.Result(); res.Signal != int(syscall.SIGKILL) {
		t.Fatalf("result %+v, want SIGKILL after the kill timeout", res)
	}
}

func TestRawExecRecoverWatchesWithPidfd(t *testing.T) {
	d := NewRawExec(newWatcher(t))
	task, out := startRaw(t, d, "sleep")
	if _, err := out.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	h := task.Handle()
	task.Detach() // the "agent" lets go; the process keeps running

	d2 := NewRawExec(newWatcher(t))
	re, err := d2.Recover(context.Background(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer re.Detach()
	select {
	case <-re.Done():
		t.Fatal("re-adopted task reported dead while running")
	default:
	}
	if err := syscall.Kill(h.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	res := waitDone(t, re, 10*time.Second)
	if !res.Unknown {
		t.Fatalf("result %+v: a re-adopted task's exit code must be reported unknown", res)
	}
}

func TestRecoverRefusesReusedPid(t *testing.T) {
	d := NewRawExec(newWatcher(t))
	task, out := startRaw(t, d, "sleep")
	if _, err := out.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	h := task.Handle()
	h.StartTime++ // as if the pid now belonged to a later process
	re, err := d.Recover(context.Background(), h, nil)
	if !errors.Is(err, ErrPidReused) {
		t.Fatalf("Recover = %v, %v; want ErrPidReused", re, err)
	}
	if !alive(h.Pid) {
		t.Fatal("the stranger process was harmed")
	}
	select {
	case <-task.Done():
		t.Fatal("process exited")
	default:
	}
}

func TestRecoverGone(t *testing.T) {
	d := NewRawExec(newWatcher(t))
	task, _ := startRaw(t, d, "exit", "0")
	waitDone(t, task, 10*time.Second)
	_, err := d.Recover(context.Background(), task.Handle(), nil)
	if !errors.Is(err, ErrTaskGone) {
		t.Fatalf("Recover of an exited task = %v, want ErrTaskGone", err)
	}
}

func TestChecksum(t *testing.T) {
	b, err := os.ReadFile(testTask)
	if err != nil {
		t.Fatal(err)
	}
	good := fmt.Sprintf("sha256:%x", sha256.Sum256(b))
	if err := VerifyChecksum(testTask, good); err != nil {
		t.Fatalf("matching checksum rejected: %v", err)
	}
	bad := "sha256:" + strings.Repeat("0", 64)
	d := NewRawExec(newWatcher(t))
	_, err = d.Start(context.Background(), &StartRequest{Command: testTask, Args: []string{"sleep"}, Checksum: bad})
	if !errors.Is(err, ErrChecksumMismatch) {
		t.Fatalf("Start with a wrong checksum = %v, want ErrChecksumMismatch", err)
	}
	for _, malformed := range []string{"md5:00", "sha256:zz", "sha256"} {
		if err := VerifyChecksum(testTask, malformed); err == nil || errors.Is(err, ErrChecksumMismatch) {
			t.Errorf("VerifyChecksum(%q) = %v, want a format error", malformed, err)
		}
	}
}

func TestResolveCommand(t *testing.T) {
	if _, err := ResolveCommand("no-such-binary-xyz", []string{"PATH=/nonexistent"}, ""); err == nil {
		t.Fatal("missing command resolved")
	}
	// A bare name not on the task's PATH falls back to the agent's PATH.
	p, err := ResolveCommand("sh", []string{"PATH=/nonexistent"}, "")
	if err != nil || !strings.HasSuffix(p, "/sh") {
		t.Fatalf("ResolveCommand(sh) = %q, %v", p, err)
	}
}

func TestProcStartTimeParsesOddComm(t *testing.T) {
	st, err := ProcStartTime(os.Getpid())
	if err != nil || st == 0 {
		t.Fatalf("ProcStartTime(self) = %d, %v", st, err)
	}
	if _, err := ProcStartTime(1 << 30); !errors.Is(err, ErrTaskGone) {
		t.Fatalf("ProcStartTime(no such pid) = %v, want ErrTaskGone", err)
	}
}
