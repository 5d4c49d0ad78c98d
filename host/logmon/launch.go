package logmon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// Config says how to start a shipper for one task.
type Config struct {
	// Command is the shipper's argv prefix, normally
	// [<pluginhost binary>, "logmon"]; Start appends the flags.
	Command []string
	// Dir is the log directory, opened (allocdir.OpenLogs); the shipper
	// gets the descriptor, not the path. The caller keeps and closes it.
	Dir         *beneath.Dir
	Task        string
	MaxFiles    int
	MaxFileSize int64
	// FileMode is the mode of the files the shipper creates (0 is 0640).
	FileMode os.FileMode
}

// Process is a started shipper. The task gets Stdout and Stderr; the caller
// must close its copies once the task has them, or the shipper never sees
// EOF.
type Process struct {
	Pid            int
	Stdout, Stderr *os.File
	proc           *os.Process
	done           chan struct{}

	// ready is closed once the shipper has answered on its readiness
	// pipe (or exited without answering); readyErr is then final.
	ready    chan struct{}
	readyErr error
}

// Done is closed when the shipper exits (only for a shipper this process
// started; after an agent restart the shipper is nobody's child but init's).
func (p *Process) Done() <-chan struct{} { return p.done }

// CloseWriters closes the caller's write ends.
func (p *Process) CloseWriters() {
	_ = p.Stdout.Close()
	_ = p.Stderr.Close()
}

// Ready waits until the shipper has its files open. It returns the
// shipper's own error if it could not start (the shipper has exited then),
// or ctx's error if ctx ends first; in that case the shipper is left alone,
// since a task may already be writing to it. It may be called any number
// of times.
func (p *Process) Ready(ctx context.Context) error {
	select {
	case <-p.ready:
		return p.readyErr
	case <-ctx.Done():
		return fmt.Errorf("logmon: waiting for the shipper (pid %d): %w", p.Pid, ctx.Err())
	}
}

// Start launches a shipper and waits for it to be ready (Spawn, then
// Ready). On any failure the shipper is gone and the write ends are closed.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	p, err := Spawn(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.Ready(ctx); err != nil {
		p.CloseWriters()
		_ = p.proc.Kill()
		return nil, err
	}
	return p, nil
}

// Spawn launches a shipper in its own session and returns without waiting
// for it: the caller may hand Stdout and Stderr to a task at once, since
// the pipes hold what the task writes until the shipper reads it, and
// call Ready later. The shipper's start-up (an exec and a Go runtime) then
// overlaps the task's. The caller owns the outcome: if Ready fails, the
// task's output has no reader.
func Spawn(cfg Config) (*Process, error) {
	if len(cfg.Command) == 0 {
		return nil, errors.New("logmon: no command")
	}
	var closers []*os.File
	closeAll := func() {
		for _, f := range closers {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			closers = append(closers, r, w)
		}
		return
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("logmon pipe: %w", err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("logmon pipe: %w", err)
	}
	readyR, readyW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("logmon pipe: %w", err)
	}
	if cfg.Dir == nil {
		closeAll()
		return nil, errors.New("logmon: no log directory")
	}
	mode := cfg.FileMode.Perm()
	if mode == 0 {
		mode = 0o640
	}
	args := append(append([]string{}, cfg.Command[1:]...),
		"-dir", cfg.Dir.Name(), "-task", cfg.Task,
		"-max-files", strconv.Itoa(cfg.MaxFiles),
		"-max-file-size", strconv.FormatInt(cfg.MaxFileSize, 10),
		"-file-mode", "0"+strconv.FormatUint(uint64(mode), 8))
	cmd := exec.Command(cfg.Command[0], args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.ExtraFiles = []*os.File{outR, errR, readyW, cfg.Dir.File()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("start logmon: %w", err)
	}
	// Only the shipper may hold the read ends and the ready writer.
	_ = outR.Close()
	_ = errR.Close()
	_ = readyW.Close()
	p := &Process{
		Pid: cmd.Process.Pid, Stdout: outW, Stderr: errW, proc: cmd.Process,
		done: make(chan struct{}), ready: make(chan struct{}),
	}
	go func() {
		defer close(p.done)
		_ = cmd.Wait()
	}()
	// Owned by p: the read ends when the shipper answers or exits (it
	// holds the only write end of the readiness pipe).
	go func() {
		defer close(p.ready)
		defer readyR.Close()
		s, _ := bufio.NewReader(readyR).ReadString('\n')
		switch s = strings.TrimSpace(s); {
		case s == "ok":
		case s == "":
			p.readyErr = fmt.Errorf("logmon for %s: exited before it was ready", cfg.Task)
		case strings.HasPrefix(s, unsafePrefix+": "):
			p.readyErr = fmt.Errorf("logmon for %s: %w", cfg.Task, beneath.Reported(strings.TrimPrefix(s, unsafePrefix+": ")))
		default:
			p.readyErr = fmt.Errorf("logmon for %s: %s", cfg.Task, s)
		}
	}()
	return p, nil
}
