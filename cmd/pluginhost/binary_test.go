package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/internal/badjobs"
	"github.com/pluginhost/pluginhost/internal/testbin"
)

// The tests in this file run the real binary: exit codes, stdout/stderr and
// signal handling are the process's, not run()'s.

func TestBinaryValidateAndVersion(t *testing.T) {
	bin := testbin.MustPath(t, "pluginhost")
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "pluginhost v") {
		t.Errorf("version: %v %s", err, out)
	}
	out, err = exec.Command(bin, "job", "validate", exampleJob).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Job validation successful") {
		t.Errorf("validate good file: %v %s", err, out)
	}
	cmd := exec.Command(bin, "job", "validate", "/nonexistent.hcl")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "no such file") {
		t.Errorf("validate missing file: %v %s", err, stderr.String())
	}
}

// TestBinaryValidateRefusesHostileFiles: `job validate` on issue 26's files
// prints where each crosses a limit and exits 1; the nested one used to
// end the process with "fatal error: stack overflow" (exit 2).
func TestBinaryValidateRefusesHostileFiles(t *testing.T) {
	bin := testbin.MustPath(t, "pluginhost")
	dir := t.TempDir()
	for name, c := range map[string]struct {
		src  []byte
		want string
	}{
		"nested.hcl": {badjobs.NestedParens(badjobs.IssueNesting), ":3:75: Nesting too deep"},
		"wide.hcl":   {badjobs.ManyGroups(badjobs.IssueGroups, badjobs.IssueCount), ":58783:14: Job file too large"},
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, c.src, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "job", "validate", path)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("%s: %v, want exit status 1; stderr:\n%.2000s", name, err, stderr.String())
			continue
		}
		if !strings.HasPrefix(stderr.String(), "Job validation errors:\n"+path+c.want+"\n") || stdout.Len() != 0 {
			t.Errorf("%s: stdout %q, stderr:\n%.2000s", name, stdout.String(), stderr.String())
		}
		if stderr.Len() > 2000 {
			t.Errorf("%s: %d bytes of error for one problem", name, stderr.Len())
		}
	}
}

// TestBinaryFollowEndsOnSIGINT: Ctrl-C ends `alloc logs -f` cleanly (exit
// 0, output kept), through main's signal context.
func TestBinaryFollowEndsOnSIGINT(t *testing.T) {
	bin := testbin.MustPath(t, "pluginhost")
	fa, addr := startAgent(t)
	ctx := testCtx(t)
	runCLI(t, ctx, addr, "job", "run", "-detach", exampleJob)
	fa.mu.Lock()
	fa.logs["00000001-0000-4000-8000-000000000000/sleep/stdout"] = "hello\n"
	fa.mu.Unlock()

	cmd := exec.CommandContext(ctx, bin, "alloc", "logs", "-f", "00000001")
	cmd.Env = append(os.Environ(), api.EnvAddr+"="+addr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	select {
	case <-fa.following:
	case <-ctx.Done():
		t.Fatal("the binary never followed the log")
	}
	// Interrupt only once the backlog is out, so the test shows that
	// SIGINT ends the stream rather than racing it.
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Fatalf("first line = %q, %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("alloc logs -f after SIGINT: %v\nstderr: %s", err, stderr.String())
	}
	if len(rest) != 0 {
		t.Errorf("unexpected output after the backlog: %q", rest)
	}
}

// TestBinaryLogmonWired: the hidden subcommand reaches logmon.Main, whose
// flag errors exit 2 (the CLI's own usage errors exit 1).
func TestBinaryLogmonWired(t *testing.T) {
	bin := testbin.MustPath(t, "pluginhost")
	err := exec.Command(bin, "logmon", "-no-such-flag").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("pluginhost logmon -no-such-flag: %v, want exit 2", err)
	}
}
