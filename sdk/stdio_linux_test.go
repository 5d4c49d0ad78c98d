package sdk

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

func isNonblock(t *testing.T, f *os.File) bool {
	t.Helper()
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// A full pipe makes the replacement fail fast with EAGAIN, while the original
// descriptor (shared with whoever else holds it) stays blocking.
func TestNonBlockingStdioFullPipe(t *testing.T) {
	_, w := pipe(t)
	nb, ok, err := nonBlockingStdio(w)
	if err != nil || !ok {
		t.Fatalf("nonBlockingStdio = %v, %v", ok, err)
	}
	defer nb.Close()
	n, err := nb.Write(make([]byte, 1<<20))
	if !errors.Is(err, syscall.EAGAIN) || n == 0 || n >= 1<<20 {
		t.Fatalf("Write(1 MiB) to an unread pipe = %d, %v; want a partial write and EAGAIN", n, err)
	}
	if isNonblock(t, w) {
		t.Fatal("the original descriptor became non-blocking")
	}
}

func TestNonBlockingStdioReaderGone(t *testing.T) {
	r, w := pipe(t)
	nb, ok, err := nonBlockingStdio(w)
	if err != nil || !ok {
		t.Fatalf("nonBlockingStdio = %v, %v", ok, err)
	}
	defer nb.Close()
	_ = r.Close()
	if _, err := nb.Write([]byte("x\n")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write with no reader = %v, want EPIPE", err)
	}
}

// A named FIFO whose reader is gone cannot even be reopened without blocking;
// that is reported (no file), and swapStdio then discards output.
func TestNonBlockingStdioFIFOWithoutReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_ = r.Close()
	if f, _, err := nonBlockingStdio(w); f != nil || !errors.Is(err, syscall.ENXIO) {
		t.Fatalf("reopen with no reader = %v, %v; want nil, ENXIO", f, err)
	}
}

func TestNonBlockingStdioLeavesFilesAlone(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, ok, err := nonBlockingStdio(f)
	if err != nil || ok || got != f {
		t.Fatalf("regular file: got %v, %v, %v; want it back unchanged", got, ok, err)
	}
}
