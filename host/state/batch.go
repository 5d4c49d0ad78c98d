package state

import (
	"fmt"
	"sync"
	"time"

	"go.etcd.io/bbolt"
)

// batcher is group commit for writes that may share a transaction (see
// doc.go, "Commit cost"): a writer that finds a commit running queues its
// function, and the next writer to get the commit slot runs every queued
// function in one transaction, so N concurrent writers pay for about two
// commits instead of N.
//
// Under a steady stream of concurrent writers that alone still commits
// every other write or so, and each commit is two fdatasyncs, which on a
// shared disk slow whatever else syncs there (a plugin's own state). So a
// writer that takes the slot while a stream is on (others queued behind
// it, or the last commit was shared and ended within the window) holds the
// slot while more writers keep arriving, each within one commit's time of
// the last, for up to the window: a write that joins saves a commit, and
// waiting longer than a commit for one would cost more than it saves. This
// is PostgreSQL's commit_delay, which likewise waits only when other
// transactions are active. A lone writer commits at once, except within the
// window after a shared commit, where it waits up to one commit's time
// (at most the window) for company; there is otherwise no timer on its
// path, unlike bbolt's DB.Batch (whose MaxBatchDelay would add
// up to 10 ms to every lone write, and whose timer runs the commit on a
// goroutine where a bbolt panic on a damaged file could not be recovered).
type batcher struct {
	// slot holds a token while a writer gathers and commits a
	// transaction: whoever sends into it leads the next one.
	slot chan struct{}
	// window bounds a leader's wait for more writers (groupWindow; 0
	// turns the wait off); minGap is the least it waits for the next
	// one (minGroupGap), whatever the last commit took.
	window, minGap time.Duration
	// Under the slot: the last transaction's size, end and duration.
	lastSize   int
	lastEnd    time.Time
	lastCommit time.Duration

	mu      sync.Mutex
	pending []*batchCall
	// arrived is signalled when a writer queues while a leader gathers.
	arrived   chan struct{}
	gathering bool
}

// groupWindow bounds the wait of a commit for more writers. It adds at most
// this much to a write's latency under load, and to a lone write only
// when it comes within the window after a shared commit (then at most one
// commit's time). With it, BenchmarkVolumes100's agent makes 1.0 to 1.2
// commits per volume instead of 2.7 (four writes each), and its x-bare fell
// by about 0.08 (five runs each way, alternating).
const groupWindow = 2 * time.Millisecond

// minGroupGap is the least a gathering commit waits for the next writer.
const minGroupGap = 100 * time.Microsecond

// maxGroup ends the wait early: a transaction this large already pays for
// its commit many times over.
const maxGroup = 64

func newBatcher(window, minGap time.Duration) batcher {
	return batcher{slot: make(chan struct{}, 1), window: window, minGap: minGap}
}

type batchCall struct {
	op string
	fn func(*bbolt.Tx) error
	// done is closed, and err set, once the call's transaction ended.
	done chan struct{}
	err  error
}

// batch runs fn in a read-write transaction, possibly shared with other
// batch callers; it returns once that transaction is committed (durable)
// or fn's own error. fn may run more than once (when another function of
// its transaction fails, the rest run again without it), so it must only
// act through tx. An error from fn fails fn's call alone; a failed commit
// or a bbolt panic (a damaged file) fails every call of the transaction.
func (db *DB) batch(op string, fn func(*bbolt.Tx) error) error {
	c := &batchCall{op: op, fn: fn, done: make(chan struct{})}
	b := &db.batcher
	b.mu.Lock()
	b.pending = append(b.pending, c)
	if b.gathering {
		select {
		case b.arrived <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()

	// A writer whose call a leader took waits on its own channel, not on
	// the slot: it returns as soon as its transaction is committed, and
	// never queues behind the next leader's gather.
	select {
	case <-c.done:
		return c.err
	case b.slot <- struct{}{}:
	}
	defer func() { <-b.slot }()
	select {
	case <-c.done:
		// Committed by the leader before us (both cases were ready).
		return c.err
	default:
	}
	b.mu.Lock()
	n := len(b.pending)
	b.mu.Unlock()
	if b.window > 0 && n < maxGroup && (n > 1 || b.lastSize > 1 && time.Since(b.lastEnd) < b.window) {
		b.gather()
	}
	b.mu.Lock()
	calls := b.pending
	b.pending = nil
	b.mu.Unlock()

	start := time.Now()
	db.runBatch(calls)
	b.lastEnd = time.Now()
	b.lastSize, b.lastCommit = len(calls), b.lastEnd.Sub(start)
	for _, bc := range calls {
		close(bc.done)
	}
	return c.err
}

// gather holds the commit slot while writers keep queueing, each within
// one commit's time of the one before, until the window has passed or
// maxGroup writes are queued.
func (b *batcher) gather() {
	b.mu.Lock()
	if b.arrived == nil {
		b.arrived = make(chan struct{}, 1)
	}
	b.gathering = true
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.gathering = false
		select {
		case <-b.arrived:
		default:
		}
		b.mu.Unlock()
	}()
	deadline := time.Now().Add(b.window)
	idle := min(max(b.lastCommit, b.minGap), b.window)
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return
		case <-b.arrived:
		}
		b.mu.Lock()
		n := len(b.pending)
		b.mu.Unlock()
		left := time.Until(deadline)
		if n >= maxGroup || left <= 0 {
			return
		}
		t.Reset(min(idle, left))
	}
}

// runBatch commits calls in one transaction, setting each call's err. A
// call whose function fails is taken out and the rest run again, as
// bbolt's DB.Batch does, so one bad write never takes the others down.
func (db *DB) runBatch(calls []*batchCall) {
	for len(calls) > 0 {
		failed, err := db.tryBatch(calls)
		if failed < 0 {
			// Committed, or the commit itself failed: the same for all.
			for _, c := range calls {
				if err != nil {
					c.err = fmt.Errorf("%s in state file %s: %w", c.op, db.path, err)
				}
			}
			return
		}
		calls[failed].err = fmt.Errorf("%s in state file %s: %w", calls[failed].op, db.path, err)
		calls = append(calls[:failed:failed], calls[failed+1:]...)
	}
}

// tryBatch runs every call's function in one transaction. failed is the
// index of the function that failed (the transaction is rolled back), or
// -1 when the commit succeeded or failed as a whole; panics (bbolt on a
// damaged file) become ErrCorrupt, as in update.
func (db *DB) tryBatch(calls []*batchCall) (failed int, err error) {
	failed = -1
	defer func() {
		if r := recover(); r != nil {
			db.log.Error("bbolt panicked; the state file is damaged", "op", calls[0].op, "batch", len(calls), "panic", r)
			failed, err = -1, fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	err = db.commit(len(calls), func(tx *bbolt.Tx) error {
		for i, c := range calls {
			if err := c.fn(tx); err != nil {
				failed = i
				return err
			}
		}
		return nil
	})
	return failed, err
}
