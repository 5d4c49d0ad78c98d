package state

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"go.etcd.io/bbolt"
)

// groupCommitRun starts one blocking writer, queues n more behind it, then
// lets them all go. fn(i, tx) is writer i's function; the result is each
// writer's error and the set of transactions the queued writers ran in.
func groupCommitRun(t *testing.T, db *DB, n int, fn func(i int, tx *bbolt.Tx) error) (errs []error, txs map[*bbolt.Tx]bool) {
	t.Helper()
	allQueued := make(chan struct{})
	db.commits.mu.Lock()
	db.commits.queued = func(q int) {
		if q == n {
			close(allQueued)
		}
	}
	db.commits.mu.Unlock()
	t.Cleanup(func() {
		db.commits.mu.Lock()
		db.commits.queued = nil
		db.commits.mu.Unlock()
	})

	var mu sync.Mutex
	txs = map[*bbolt.Tx]bool{}
	leading := make(chan struct{})
	release := make(chan struct{})
	blockerErr := make(chan error, 1)
	go func() {
		blockerErr <- db.update("blocker", func(tx *bbolt.Tx) error {
			close(leading)
			<-release
			return nil
		})
	}()
	<-leading

	errs = make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = db.update(fmt.Sprintf("writer %d", i), func(tx *bbolt.Tx) error {
				mu.Lock()
				txs[tx] = true
				mu.Unlock()
				return fn(i, tx)
			})
		})
	}
	<-allQueued
	close(release)
	wg.Wait()
	if err := <-blockerErr; err != nil {
		t.Fatalf("blocking writer: %v", err)
	}
	return errs, txs
}

func putKey(tx *bbolt.Tx, i int) error {
	return tx.Bucket([]byte(bucketPlugins)).Put(fmt.Appendf(nil, "group-%03d", i), []byte("v"))
}

func keysPresent(t *testing.T, db *DB, n int) map[int]bool {
	t.Helper()
	got := map[int]bool{}
	err := db.view("check", func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketPlugins))
		for i := range n {
			if b.Get(fmt.Appendf(nil, "group-%03d", i)) != nil {
				got[i] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Writers that queue behind a commit in flight share one transaction, and
// each returns only once that transaction is durable: a reopened file has
// every acknowledged write.
func TestGroupCommitMergesQueuedWriters(t *testing.T) {
	path := statePath(t)
	db := openTest(t, path, Options{})
	const n = 40
	errs, txs := groupCommitRun(t, db, n, func(i int, tx *bbolt.Tx) error { return putKey(tx, i) })
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	if len(txs) != 1 {
		t.Fatalf("%d queued writers ran in %d transactions, want 1", n, len(txs))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, path, Options{})
	if got := keysPresent(t, db, n); len(got) != n {
		t.Fatalf("after reopen %d of %d acknowledged writes are there", len(got), n)
	}
}

// One failing writer in a shared transaction gets its own error and keeps
// nothing; every other writer of that transaction still commits.
func TestGroupCommitIsolatesAFailingWriter(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	const n = 20
	const failing, panicking = 7, 13
	boom := errors.New("boom")
	errs, _ := groupCommitRun(t, db, n, func(i int, tx *bbolt.Tx) error {
		if err := putKey(tx, i); err != nil {
			return err
		}
		switch i {
		case failing:
			return boom
		case panicking:
			panic("damaged page")
		}
		return nil
	})
	for i, err := range errs {
		switch i {
		case failing:
			if !errors.Is(err, boom) {
				t.Errorf("failing writer: %v, want boom", err)
			}
		case panicking:
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("panicking writer: %v, want ErrCorrupt", err)
			}
		default:
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		}
	}
	got := keysPresent(t, db, n)
	for i := range n {
		if want := i != failing && i != panicking; got[i] != want {
			t.Errorf("key of writer %d present = %v, want %v", i, got[i], want)
		}
	}
}
