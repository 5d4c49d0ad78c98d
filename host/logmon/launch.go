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
)

// Config says how to start a shipper for one task.
type Config struct {
	// Command is the shipper's argv prefix, normally
	// [<pluginhost binary>, "logmon"]; Start appends the flags.
	Command     []string
	Dir         string
	Task        string
	MaxFiles    int
	MaxFileSize int64
}

// Process is a started shipper. The task gets Stdout and Stderr; the caller
// must close its copies once the task has them, or the shipper never sees
// EOF.
type Process struct {
	Pid            int
	Stdout, Stderr *os.File
	done           chan struct{}
}

// Done is closed when the shipper exits (only for a shipper this process
// started; after an agent restart the shipper is nobody's child but init's).
func (p *Process) Done() <-chan struct{} { return p.done }

// CloseWriters closes the caller's write ends.
func (p *Process) CloseWriters() {
	_ = p.Stdout.Close()
	_ = p.Stderr.Close()
}

// Start launches a shipper in its own session and waits for it to report
// that its files are open.
func Start(ctx context.Context, cfg Config) (*Process, error) {
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
	args := append(append([]string{}, cfg.Command[1:]...),
		"-dir", cfg.Dir, "-task", cfg.Task,
		"-max-files", strconv.Itoa(cfg.MaxFiles),
		"-max-file-size", strconv.FormatInt(cfg.MaxFileSize, 10))
	cmd := exec.Command(cfg.Command[0], args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.ExtraFiles = []*os.File{outR, errR, readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("start logmon: %w", err)
	}
	// Only the shipper may hold the read ends and the ready writer.
	_ = outR.Close()
	_ = errR.Close()
	_ = readyW.Close()
	p := &Process{Pid: cmd.Process.Pid, Stdout: outW, Stderr: errW, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		_ = cmd.Wait()
	}()

	line := make(chan string, 1)
	go func() {
		defer readyR.Close()
		s, _ := bufio.NewReader(readyR).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case s := <-line:
		if s == "ok" {
			return p, nil
		}
		p.CloseWriters()
		if s == "" {
			s = "exited before it was ready"
		}
		return nil, fmt.Errorf("logmon for %s: %s", cfg.Task, s)
	case <-ctx.Done():
		p.CloseWriters()
		_ = cmd.Process.Kill()
		_ = readyR.Close()
		return nil, fmt.Errorf("logmon for %s: %w", cfg.Task, ctx.Err())
	}
}
