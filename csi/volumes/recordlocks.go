package volumes

import "sync"

// recordLocks serialises the read-modify-writes of each volume's record
// (see VolumeManager.recMu). One lock per volume ID instead of one for all:
// a write holds its lock through the store's commit (an fsync), and with a
// single lock concurrent volumes' writes could never meet in the store's
// group commit; every write paid a commit of its own.
type recordLocks struct {
	mu    sync.Mutex
	locks map[string]*recordLock
}

type recordLock struct {
	mu   sync.Mutex
	refs int // holders and waiters; the entry goes when it drops to 0
}

// lock takes id's lock and returns its unlock.
func (l *recordLocks) lock(id string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = make(map[string]*recordLock)
	}
	rl := l.locks[id]
	if rl == nil {
		rl = &recordLock{}
		l.locks[id] = rl
	}
	rl.refs++
	l.mu.Unlock()

	rl.mu.Lock()
	return func() {
		rl.mu.Unlock()
		l.mu.Lock()
		if rl.refs--; rl.refs == 0 {
			delete(l.locks, id)
		}
		l.mu.Unlock()
	}
}
