package apiserver

import (
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Any local user can open connections to the loopback TCP listener, and
// without a cap 19,900 idle ones took every descriptor the agent had: the
// listener then failed every accept (`accept4: too many open files`), the
// agent's own user included, and so did every file the agent opened.
//
// netutil.LimitListener is the usual answer, but it makes Accept wait for a
// free slot: the connections over the cap queue in the kernel's backlog,
// and while a flood holds every slot with connections that send nothing,
// a legitimate client queues behind it until header or idle timeouts free
// slots, which the flood takes again. connLimiter accepts every connection
// instead and, at the cap, closes the connection that has been doing
// nothing the longest (accepted without a complete request header yet, or
// idle between requests), so that a new client gets in and an idle flood
// churns through its own connections. Only when every connection is in a
// request (an event stream, a followed log: clients that passed the token
// check) is the new one closed.

// limitWarnEvery spaces the warnings about the cap, so that a flood does
// not also flood the log.
const limitWarnEvery = 30 * time.Second

// connLimiter caps the open connections accepted from one listener.
type connLimiter struct {
	net.Listener
	max int
	log hclog.Logger

	mu   sync.Mutex
	open int
	// waiting holds the connections that are not in a request (new ones
	// until their request header is read, idle ones between requests),
	// the longest waiting first: the ones to close at the cap. A list of
	// its own, linked through the connections, so that a request's two
	// state changes allocate nothing.
	waiting waitList
	// evicted and refused count since the last warning.
	evicted, refused int
	lastWarn         time.Time
}

func newConnLimiter(ln net.Listener, max int, log hclog.Logger) *connLimiter {
	return &connLimiter{Listener: ln, max: max, log: log}
}

// limitedConn is a connection the limiter counts until it is closed.
type limitedConn struct {
	net.Conn
	l *connLimiter
	// Guarded by l.mu: the place in l.waiting (waiting is false while
	// in a request), and whether the limiter still counts it.
	prev, next *limitedConn
	waiting    bool
	closed     bool
}

// waitList is a doubly linked list of connections, oldest first.
type waitList struct{ head, tail *limitedConn }

func (w *waitList) pushBack(c *limitedConn) {
	if c.waiting {
		return
	}
	c.waiting, c.prev, c.next = true, w.tail, nil
	if w.tail != nil {
		w.tail.next = c
	} else {
		w.head = c
	}
	w.tail = c
}

func (w *waitList) remove(c *limitedConn) {
	if !c.waiting {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		w.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		w.tail = c.prev
	}
	c.waiting, c.prev, c.next = false, nil, nil
}

// Accept returns the next connection, closing the longest waiting one when
// the cap is reached. A connection that cannot be made room for is closed
// at once and Accept goes on to the next: returning an error would make
// http.Server back off, and slow every client down.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc, victim := l.admit(c)
		if victim != nil {
			_ = victim.Close()
		}
		if lc != nil {
			return lc, nil
		}
		_ = c.Close()
	}
}

// admit counts c in, or returns nil when every connection is in a request;
// victim is a connection to close (after the lock is released) to make
// room.
func (l *connLimiter) admit(c net.Conn) (lc *limitedConn, victim net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max {
		old := l.waiting.head
		if old == nil {
			l.refused++
			l.warnLocked()
			return nil, nil
		}
		l.releaseLocked(old)
		victim = old.Conn
		l.evicted++
		l.warnLocked()
	}
	lc = &limitedConn{Conn: c, l: l}
	l.open++
	l.waiting.pushBack(lc)
	return lc, victim
}

// warnLocked logs what the cap did, at most once per limitWarnEvery.
func (l *connLimiter) warnLocked() {
	now := time.Now()
	if !l.lastWarn.IsZero() && now.Sub(l.lastWarn) < limitWarnEvery {
		return
	}
	l.lastWarn = now
	l.log.Warn("API connection cap reached: closing the connections that have waited longest for a request",
		"addr", l.Addr().String(), "max_conns", l.max, "every", limitWarnEvery,
		"closed_since_last_warning", l.evicted, "refused_all_in_requests_since_last_warning", l.refused)
	l.evicted, l.refused = 0, 0
}

// releaseLocked forgets c: it no longer counts against the cap.
func (l *connLimiter) releaseLocked(c *limitedConn) {
	if c.closed {
		return
	}
	c.closed = true
	l.open--
	l.waiting.remove(c)
}

// connState is the http.Server's ConnState hook: it moves a connection out
// of the waiting list while it is in a request and back, at the end, once
// idle.
func (l *connLimiter) connState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.closed {
		return
	}
	switch st {
	case http.StateActive, http.StateHijacked:
		l.waiting.remove(lc)
	case http.StateIdle:
		l.waiting.pushBack(lc)
	}
}

// Close releases the connection's place; closing twice is harmless (the
// limiter may have closed it first to make room).
func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// MaxConnsFor is the default cap of one listener (Limits.MaxConns) for a
// process whose soft RLIMIT_NOFILE is nofile: DefaultMaxConns, or a
// quarter of the limit when that is less, so that two listeners at their
// caps leave half of the descriptors to the agent's state, its tasks'
// pipes and logs, and plugin sockets.
func MaxConnsFor(nofile uint64) int {
	q := nofile / 4
	if q >= DefaultMaxConns {
		return DefaultMaxConns
	}
	return max(int(q), minMaxConns)
}

// softNofile is the process's soft RLIMIT_NOFILE; when it cannot be read,
// a value that keeps DefaultMaxConns.
func softNofile() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 4 * DefaultMaxConns
	}
	return lim.Cur
}
