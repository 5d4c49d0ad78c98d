package volumes

import (
	"testing"
	"time"
)

func TestRecordLocksPerID(t *testing.T) {
	var l recordLocks
	unlockA := l.lock("a")

	// Another ID is not held up.
	done := make(chan struct{})
	go func() {
		l.lock("b")()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("lock of b waited for a")
	}

	// The same ID waits for the holder.
	got, released := make(chan struct{}), make(chan struct{})
	go func() {
		unlock := l.lock("a")
		close(got)
		unlock()
		close(released)
	}()
	select {
	case <-got:
		t.Fatal("a second holder of a while the first holds it")
	case <-time.After(50 * time.Millisecond):
	}
	unlockA()
	<-got
	<-released

	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.locks) != 0 {
		t.Fatalf("%d lock entries left after every holder left", len(l.locks))
	}
}

// refs is how many hold or wait for id's lock.
func (l *recordLocks) refs(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rl := l.locks[id]; rl != nil {
		return rl.refs
	}
	return 0
}
