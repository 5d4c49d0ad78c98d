package state

import (
	"time"

	"go.etcd.io/bbolt"
)

// CommitObserver is told about every read-write transaction of the store
// once it has committed (fsynced) or its commit failed: how many writes it carried
// (more than one when the group commit of batch.go shared it) and how long
// it took, fsyncs included. It is called with the store's write lock
// released, from the writer's goroutine; it must be quick and safe for
// concurrent use.
type CommitObserver interface {
	ObserveCommit(writes int, d time.Duration, err error)
}

// commit runs fn in bbolt's Update and reports it to the observer. A
// transaction that fn rolled back by returning an error (a write refused,
// such as an unknown allocation) wrote nothing and is not reported; a panic
// (a damaged file) propagates to the caller's recover without a report.
func (db *DB) commit(writes int, fn func(*bbolt.Tx) error) error {
	if db.commits == nil {
		return db.bolt.Update(fn)
	}
	var fnErr error
	start := time.Now()
	err := db.bolt.Update(func(tx *bbolt.Tx) error {
		fnErr = fn(tx)
		return fnErr
	})
	if fnErr == nil {
		db.commits.ObserveCommit(writes, time.Since(start), err)
	}
	return err
}
