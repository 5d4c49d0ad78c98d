package supervisor

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// listenLater binds a unix socket at path when start is closed.
func listenLater(t *testing.T, path string, start <-chan struct{}) <-chan time.Time {
	t.Helper()
	bound := make(chan time.Time, 1)
	done := make(chan struct{})
	t.Cleanup(func() { <-done })
	go func() {
		defer close(done)
		<-start
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Error(err)
			close(bound)
			return
		}
		bound <- time.Now()
		t.Cleanup(func() { l.Close() })
	}()
	return bound
}

// The wait returns on the socket's creation, which a watch added before the
// first look cannot miss, and ignores other files in the directory.
func TestWaitForSocketWakesOnBind(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, SocketName)
	if err := os.WriteFile(filepath.Join(dir, "other"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	start := make(chan struct{})
	bound := listenLater(t, sock, start)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- waitSocket(ctx, sock) }()
	close(start)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if _, ok := <-bound; !ok {
		t.Fatal("bind failed")
	}
	if !isSocket(sock) {
		t.Fatal("returned before the socket existed")
	}
}

// A socket that is already there is found without waiting for an event.
func TestWaitForSocketExisting(t *testing.T) {
	sock := filepath.Join(t.TempDir(), SocketName)
	start := make(chan struct{})
	close(start)
	<-listenLater(t, sock, start)
	if err := waitSocket(context.Background(), sock); err != nil {
		t.Fatal(err)
	}
}

// A regular file of the socket's name is not a socket: keep waiting.
func TestWaitForSocketIgnoresRegularFile(t *testing.T) {
	sock := filepath.Join(t.TempDir(), SocketName)
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := waitSocket(ctx, sock); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
}

// Cancellation interrupts a wait blocked in read(2) on the inotify fd.
func TestWaitForSocketCancel(t *testing.T) {
	sock := filepath.Join(t.TempDir(), SocketName)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- waitSocket(ctx, sock) }()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("wait ignored cancellation")
	}
}

// A directory that does not exist yet cannot be watched; the fallback
// still finds the socket once something creates both.
func TestWaitForSocketMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "later")
	sock := filepath.Join(dir, SocketName)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- waitSocket(ctx, sock) }()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	start := make(chan struct{})
	close(start)
	<-listenLater(t, sock, start)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// A watched directory that is removed ends the watch; the wait falls back
// and finds a socket in the recreated directory.
func TestWaitForSocketDirRecreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sockets")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, SocketName)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- waitSocket(ctx, sock) }()
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	start := make(chan struct{})
	close(start)
	<-listenLater(t, sock, start)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestParseInotify(t *testing.T) {
	rec := func(mask uint32, name string) []byte {
		padded := len(name)
		if name != "" {
			padded = (len(name) + 1 + 15) &^ 15
		}
		b := make([]byte, unix.SizeofInotifyEvent+padded)
		putU32(b[4:], mask)
		putU32(b[12:], uint32(padded))
		copy(b[unix.SizeofInotifyEvent:], name)
		return b
	}
	buf := append(rec(unix.IN_CREATE, "csi.sock"), rec(unix.IN_Q_OVERFLOW, "")...)
	buf = append(buf, rec(unix.IN_CREATE, "truncated")[:unix.SizeofInotifyEvent+3]...)
	got := parseInotify(buf)
	if len(got) != 2 || got[0].name != "csi.sock" || got[0].mask != unix.IN_CREATE || got[1].mask != unix.IN_Q_OVERFLOW || got[1].name != "" {
		t.Fatalf("parsed %+v", got)
	}
	if got := parseInotify(buf[:5]); len(got) != 0 {
		t.Fatalf("short buffer parsed as %+v", got)
	}
}

// waitSocket is waitForSocket with its release done at once.
func waitSocket(ctx context.Context, path string) error {
	release, err := waitForSocket(ctx, path)
	release()
	return err
}

// Between bind(2), which the inotify event reports, and listen(2) a dial is
// refused; waitListening rides that gap out and returns once the plugin
// listens.
func TestWaitListeningBetweenBindAndListen(t *testing.T) {
	sock := filepath.Join(t.TempDir(), SocketName)
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: sock}); err != nil {
		t.Fatal(err)
	}
	if err := waitSocket(context.Background(), sock); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	err = waitListening(ctx, sock, time.Millisecond, nil)
	cancel()
	if !errors.Is(err, unix.ECONNREFUSED) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("bound but not listening: err = %v, want refused and the deadline", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- waitListening(ctx, sock, time.Millisecond, nil) }()
	if err := unix.Listen(fd, 1); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
