package supervisor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// waitForSocket returns nil once path exists and is a unix socket, or ctx's
// error. It waits on inotify events of the socket's directory, so it
// returns within the kernel's event latency of the plugin's bind(2), not
// at the next tick of a poll. The watch is added before the second look, so
// a socket created in between is seen by one or the other.
//
// Closing an inotify descriptor waits for an SRCU grace period in the
// kernel (measured: 10-20 ms), so the descriptor is not closed on the way
// out; the caller gets release, which closes it and which it must call
// once (off its critical path: the supervision calls it from a goroutine
// it waits for when it ends). release is never nil.
//
// A directory that does not exist (a CSI_ENDPOINT the task chose, in a
// directory the plugin creates itself) cannot be watched; then, and only
// then, it polls with a doubling interval.
func waitForSocket(ctx context.Context, path string) (release func(), err error) {
	release = func() {}
	// Re-adopted plugins and go_plugin launches already have their socket.
	if isSocket(path) {
		return release, nil
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return release, pollForSocket(ctx, path)
	}
	// Non-blocking, so os.NewFile hands it to the runtime poller and a read
	// deadline can interrupt a read in flight.
	f := os.NewFile(uintptr(fd), "inotify")
	release = func() { _ = f.Close() }
	const mask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(path), mask); err != nil {
		return release, pollForSocket(ctx, path)
	}
	if isSocket(path) {
		return release, nil
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	name := filepath.Base(path)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := f.Read(buf)
		if err != nil {
			if ctx.Err() != nil {
				return release, ctx.Err()
			}
			return release, fmt.Errorf("wait for socket %s: read inotify: %w", path, err)
		}
		for _, ev := range parseInotify(buf[:n]) {
			switch {
			case ev.mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0:
				// The directory went away under us; whoever recreates it
				// cannot be watched by this descriptor any more.
				return release, pollForSocket(ctx, path)
			case ev.mask&unix.IN_Q_OVERFLOW != 0 || ev.name == name:
				if isSocket(path) {
					return release, nil
				}
			}
		}
	}
}

type inotifyEvent struct {
	mask uint32
	name string
}

// parseInotify decodes struct inotify_event records (wd, mask, cookie, len,
// then len bytes of NUL-padded name), stopping at a truncated record.
func parseInotify(b []byte) []inotifyEvent {
	var out []inotifyEvent
	for len(b) >= unix.SizeofInotifyEvent {
		mask := binary.NativeEndian.Uint32(b[4:8])
		nameLen := int(binary.NativeEndian.Uint32(b[12:16]))
		end := unix.SizeofInotifyEvent + nameLen
		if end > len(b) {
			break
		}
		name := b[unix.SizeofInotifyEvent:end]
		for len(name) > 0 && name[len(name)-1] == 0 {
			name = name[:len(name)-1]
		}
		out = append(out, inotifyEvent{mask: mask, name: string(name)})
		b = b[end:]
	}
	return out
}

// pollForSocket is the fallback for a directory inotify cannot watch.
func pollForSocket(ctx context.Context, path string) error {
	wait := 5 * time.Millisecond
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if isSocket(path) {
			return nil
		}
		t.Reset(wait)
		wait = min(2*wait, 250*time.Millisecond)
	}
}

func isSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// errSocketTimeout is wrapped when health_timeout ends before the socket
// appeared, so the restart reason says what was missing.
var errSocketTimeout = errors.New("plugin socket never appeared")

// waitListening dials path until something accepts. The inotify event
// comes at bind(2), and a plugin calls listen(2) just after: a dial in
// between is refused. Letting gRPC make that dial would put its channel in
// TRANSIENT_FAILURE, and every call would then fail fast until its
// reconnect backoff ran out; a plain dial retried after a millisecond or
// two costs nothing. Only ECONNREFUSED is retried (and ENOENT, for a socket
// replaced in between); anything else is for the probe to report.
//
// dial, if not nil, is the agent's dial of a plugin socket (ClientConfig's
// Dial): a refusal of a planted link is reported at once, like any error
// that is not a refused connection.
func waitListening(ctx context.Context, path string, maxWait time.Duration, dial func(context.Context, string) (net.Conn, error)) error {
	wait := time.Millisecond
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	if dial == nil {
		dial = func(ctx context.Context, p string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", p)
		}
	}
	var refused error
	for {
		c, err := dial(ctx, path)
		if err == nil {
			return c.Close()
		}
		switch {
		case errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT):
			refused = err
		case refused != nil && (ctx.Err() != nil || isTimeout(err)):
			// The deadline cut a dial short (the dialer's own timer can fire
			// a moment before ctx reports it); the refusal before it is the
			// news.
		case errors.Is(err, beneath.ErrUnsafe):
			return err
		default:
			return nil
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return fmt.Errorf("socket %s: %w (%w)", path, refused, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, maxWait)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
