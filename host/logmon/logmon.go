package logmon

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// unsafePrefix starts a readiness answer that refuses the log directory's
// contents (see Spawn).
const unsafePrefix = "unsafe"

// File descriptors of the shipper process, in the order Start passes them.
const (
	fdStdout = 3
	fdStderr = 4
	fdReady  = 5
	// fdDir is the log directory, opened by the agent beneath the data
	// dir (allocdir.OpenLogs): the shipper never resolves its path.
	fdDir = 6
)

// Main is the shipper process: `pluginhost logmon -dir D -task T ...` with
// the task's stdout and stderr pipes on fds 3 and 4, a readiness pipe on
// fd 5 and the log directory D itself on fd 6. It returns (the exit code)
// once both task pipes are closed, i.e. when the task and everything it
// forked have exited.
func Main(args []string) int {
	fs := flag.NewFlagSet("logmon", flag.ContinueOnError)
	dir := fs.String("dir", "", "log directory (alloc/logs), for messages: the directory is fd 6")
	task := fs.String("task", "", "task name, the file prefix")
	maxFiles := fs.Int("max-files", 10, "files kept per stream")
	maxSize := fs.Int64("max-file-size", 10<<20, "bytes per file")
	mode := fs.Uint("file-mode", 0o640, "mode of the files it creates")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// The agent may die at any time; the shipper must not die with it, nor
	// of a broken pipe to a reader that is gone.
	signal.Ignore(syscall.SIGPIPE, syscall.SIGHUP, syscall.SIGINT)

	ready := os.NewFile(fdReady, "ready")
	fail := func(err error) int {
		if ready != nil {
			kind := "error"
			if errors.Is(err, beneath.ErrUnsafe) {
				kind = unsafePrefix
			}
			fmt.Fprintf(ready, "%s: %v\n", kind, err)
			_ = ready.Close()
		}
		fmt.Fprintf(os.Stderr, "logmon: %v\n", err)
		return 1
	}
	if *dir == "" || *task == "" {
		return fail(errors.New("-dir and -task are required"))
	}
	if *mode > 0o777 {
		return fail(fmt.Errorf("-file-mode %#o: permission bits only", *mode))
	}
	logs, err := beneath.FromFile(os.NewFile(fdDir, *dir), *dir)
	if err != nil {
		return fail(fmt.Errorf("log directory on fd %d: %w", fdDir, err))
	}
	defer logs.Close()
	streams := []struct {
		fd   uintptr
		name string
	}{{fdStdout, "stdout"}, {fdStderr, "stderr"}}
	var rots []*Rotator
	for _, s := range streams {
		r, err := NewRotator(logs, *task+"."+s.name, *maxFiles, *maxSize, os.FileMode(*mode))
		if err != nil {
			return fail(err)
		}
		rots = append(rots, r)
	}
	if ready != nil {
		_, _ = io.WriteString(ready, "ok\n")
		_ = ready.Close()
	}
	var wg sync.WaitGroup
	errs := make([]error, len(streams))
	for i, s := range streams {
		in := os.NewFile(s.fd, s.name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer in.Close()
			_, errs[i] = copyStream(rots[i], in)
			if err := rots[i].Close(); errs[i] == nil {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "logmon: %v\n", err)
		return 1
	}
	return 0
}

// copyStream copies until EOF. A write error (disk full) does not stop the
// draining: a task blocked on a full pipe would be worse than lost lines.
func copyStream(w io.Writer, r io.Reader) (int64, error) {
	buf := make([]byte, 32<<10)
	var total int64
	var firstErr error
	for {
		n, err := r.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil && firstErr == nil {
				firstErr = werr
			}
		}
		if err == io.EOF {
			return total, firstErr
		}
		if err != nil {
			return total, errors.Join(firstErr, err)
		}
	}
}
