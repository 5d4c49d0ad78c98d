package driver

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Watcher notices the exit of processes that are not our children (tasks
// re-adopted after an agent restart) without polling: each is a pidfd in one
// epoll set, and a pidfd becomes readable when its process exits. One
// goroutine, blocked in epoll_wait, serves every adopted task, so adopting a
// hundred tasks costs a hundred fds and map entries, not a hundred threads.
type Watcher struct {
	epfd int
	evfd int // wakes the loop for Close

	mu      sync.Mutex
	watches map[int32]chan struct{}
	closing bool

	stopped chan struct{}
}

// NewWatcher starts the watcher's goroutine; Close stops it.
func NewWatcher() (*Watcher, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create: %w", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(evfd)}); err != nil {
		_ = unix.Close(epfd)
		_ = unix.Close(evfd)
		return nil, fmt.Errorf("epoll_ctl eventfd: %w", err)
	}
	w := &Watcher{epfd: epfd, evfd: evfd, watches: map[int32]chan struct{}{}, stopped: make(chan struct{})}
	go w.loop()
	return w, nil
}

// Watch returns a channel closed when the process behind pidfd exits (or
// when cancel is called, or the watcher closes). The caller keeps owning
// pidfd and must call cancel before closing it.
func (w *Watcher) Watch(pidfd int) (<-chan struct{}, func(), error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return nil, nil, errors.New("watcher closed")
	}
	ch := make(chan struct{})
	w.watches[int32(pidfd)] = ch
	if err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, pidfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(pidfd)}); err != nil {
		delete(w.watches, int32(pidfd))
		return nil, nil, fmt.Errorf("epoll_ctl pidfd: %w", err)
	}
	return ch, func() { w.remove(int32(pidfd)) }, nil
}

func (w *Watcher) remove(fd int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.watches[fd]
	if !ok {
		return
	}
	delete(w.watches, fd)
	if !w.closing {
		_ = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
	}
	close(ch)
}

func (w *Watcher) loop() {
	defer close(w.stopped)
	events := make([]unix.EpollEvent, 64)
	for {
		n, err := unix.EpollWait(w.epfd, events, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			w.closeAll()
			return
		}
		for _, ev := range events[:n] {
			if ev.Fd == int32(w.evfd) {
				w.closeAll()
				return
			}
			w.remove(ev.Fd)
		}
	}
}

func (w *Watcher) closeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closing = true
	for fd, ch := range w.watches {
		delete(w.watches, fd)
		close(ch)
	}
}

// Close stops the goroutine and releases the epoll set; it leaves every
// watched process running.
func (w *Watcher) Close() error {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		<-w.stopped
		return nil
	}
	w.mu.Unlock()
	var one = []byte{1, 0, 0, 0, 0, 0, 0, 0}
	if _, err := unix.Write(w.evfd, one); err != nil {
		return fmt.Errorf("wake watcher: %w", err)
	}
	<-w.stopped
	_ = unix.Close(w.epfd)
	_ = unix.Close(w.evfd)
	return nil
}
