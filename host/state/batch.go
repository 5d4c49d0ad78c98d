package state

import (
	"fmt"
	"sync"

	"go.etcd.io/bbolt"
)

// batcher is group commit for writes that may share a transaction (see
// doc.go, "Commit cost"): a writer that finds a commit running queues its
// function, and the next writer to get the commit slot runs every queued
// function in one transaction, so N concurrent writers pay for about two
// commits instead of N. A lone writer commits at once: there is no timer,
// unlike bbolt's DB.Batch (whose MaxBatchDelay would add up to 10 ms to
// every lone write, and whose timer runs the commit on a goroutine where a
// bbolt panic on a damaged file could not be recovered).
type batcher struct {
	// commit is held by the writer running a transaction.
	commit sync.Mutex

	mu      sync.Mutex
	pending []*batchCall
}

type batchCall struct {
	op   string
	fn   func(*bbolt.Tx) error
	done bool // under batcher.mu
	err  error
}

// batch runs fn in a read-write transaction, possibly shared with other
// batch callers; it returns once that transaction is committed (durable)
// or fn's own error. fn may run more than once (when another function of
// its transaction fails, the rest run again without it), so it must only
// act through tx. An error from fn fails fn's call alone; a failed commit
// or a bbolt panic (a damaged file) fails every call of the transaction.
func (db *DB) batch(op string, fn func(*bbolt.Tx) error) error {
	c := &batchCall{op: op, fn: fn}
	b := &db.batcher
	b.mu.Lock()
	b.pending = append(b.pending, c)
	b.mu.Unlock()

	b.commit.Lock()
	defer b.commit.Unlock()
	b.mu.Lock()
	if c.done {
		// An earlier holder of the slot committed it.
		b.mu.Unlock()
		return c.err
	}
	calls := b.pending
	b.pending = nil
	b.mu.Unlock()

	db.runBatch(calls)
	b.mu.Lock()
	for _, bc := range calls {
		bc.done = true
	}
	b.mu.Unlock()
	return c.err
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
