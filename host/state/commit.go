package state

import (
	"sync"

	"go.etcd.io/bbolt"
)

// committer is the store's group commit. Every bbolt commit costs two
// fdatasyncs whatever it writes, and bbolt has one writer at a time, so
// writers that arrive together (a hundred task runners re-adopting their
// tasks after an agent restart, a plugin launching while another stops)
// would otherwise queue for one fsync pair each.
//
// A writer that finds no commit in flight commits at once, alone: no
// waiting for company, unlike bbolt's Batch with its MaxBatchDelay. Writers
// that arrive while a commit is in flight queue up; when it is done the
// first of them commits the whole queue in one transaction. Every writer
// still returns only after its own writes are durable.
//
// Functions in one transaction fail together: if one returns an error (or
// bbolt panics) the transaction is rolled back and every function of it is
// run again in a transaction of its own, so that each writer gets exactly
// its own outcome. Store functions are pure writes to the transaction,
// which makes running one twice harmless.
type committer struct {
	bolt *bbolt.DB

	mu    sync.Mutex
	queue []*pendingWrite
	// busy is true while some writer leads: it is committing, or it has
	// been handed the queue and is about to.
	busy bool
	// queued, if set, is called with the queue length after a writer
	// joined a queue behind a commit in flight (tests).
	queued func(n int)
}

type pendingWrite struct {
	fn  func(*bbolt.Tx) error
	err error
	// wake receives once: either the write is finished (done set) or
	// this writer must lead the next commit.
	wake chan struct{}
	done bool
}

// update runs fn in a write transaction, possibly shared with concurrent
// writers, and returns once that transaction is durable or rolled back.
// recoverErr turns a bbolt panic into the error the caller sees.
func (c *committer) update(fn func(*bbolt.Tx) error, recoverErr func(r any) error) error {
	w := &pendingWrite{fn: fn, wake: make(chan struct{}, 1)}
	c.mu.Lock()
	c.queue = append(c.queue, w)
	if c.busy {
		if c.queued != nil {
			c.queued(len(c.queue))
		}
		c.mu.Unlock()
		<-w.wake
		if w.done {
			return w.err
		}
		// Handed the queue: lead the next commit.
		c.mu.Lock()
	}
	c.busy = true
	batch := c.queue
	c.queue = nil
	c.mu.Unlock()

	c.commit(batch, recoverErr)

	c.mu.Lock()
	if len(c.queue) > 0 {
		// busy stays set: the next writer leads.
		c.queue[0].wake <- struct{}{}
	} else {
		c.busy = false
	}
	c.mu.Unlock()
	for _, o := range batch {
		if o != w {
			o.done = true
			o.wake <- struct{}{}
		}
	}
	return w.err
}

// commit writes batch in one transaction, or each write in its own when
// the shared one fails.
func (c *committer) commit(batch []*pendingWrite, recoverErr func(r any) error) {
	if len(batch) > 1 {
		err := c.run(func(tx *bbolt.Tx) error {
			for _, w := range batch {
				if err := w.fn(tx); err != nil {
					return err
				}
			}
			return nil
		}, recoverErr)
		if err == nil {
			return
		}
	}
	for _, w := range batch {
		w.err = c.run(w.fn, recoverErr)
	}
}

func (c *committer) run(fn func(*bbolt.Tx) error, recoverErr func(r any) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = recoverErr(r)
		}
	}()
	return c.bolt.Update(fn)
}
