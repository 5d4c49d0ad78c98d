package reconcile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Func makes the object named by key what its recorded desired state says,
// as far as it can now. It must be idempotent: it is called again after an
// error, after RequeueAfter, whenever the key is added, and at start-up for
// every object. It reads the desired state from the store each time rather
// than from the caller, so a call that comes late never acts on stale
// intent.
type Func func(ctx context.Context, key string) (Result, error)

// Result tells the queue when to look at a key again besides on Add.
type Result struct {
	// RequeueAfter > 0 runs the key again after this long (a deadline the
	// reconciler waits for, such as an update's healthy deadline).
	RequeueAfter time.Duration
}

// Config configures a Queue. Reconcile is required.
type Config struct {
	Reconcile Func
	// Workers bounds how many keys are reconciled at once (default 4).
	Workers int
	// BaseDelay and MaxDelay bound the retry delay after an error: it
	// doubles per consecutive failure of a key, from BaseDelay (default
	// 50ms) up to MaxDelay (default 30s).
	BaseDelay, MaxDelay time.Duration
	// Jitter spreads retries: each delay is drawn from [d/2, d) ("equal
	// jitter"), so keys that failed together (a plugin restart) do not all
	// retry in the same instant. The doubling stops at MaxDelay, so no
	// attempt count can overflow it.
	Jitter bool
	Logger hclog.Logger
}

// Status is what the queue knows of one key, for status views.
type Status struct {
	// Attempts counts consecutive failed passes; 0 after a success.
	Attempts int
	// LastError is the last failed pass's error, nil after a success.
	LastError error
	// Pending: a pass is queued, running, or scheduled.
	Pending bool
}

// Queue runs a Func per key: one pass per key at a time, keys in parallel up
// to Workers, a key added while its pass runs is run once more afterwards
// (adds coalesce), and failed passes are retried with per-key exponential
// backoff. Create it with New, start it with Run.
type Queue struct {
	cfg Config
	log hclog.Logger

	mu      sync.Mutex
	cond    *sync.Cond
	ready   []string        // keys waiting for a worker, in order
	queued  map[string]bool // in ready
	running map[string]bool // a worker holds it
	dirty   map[string]bool // added while running: run again
	// forgotten: Forget was called during the key's pass.
	forgotten map[string]bool
	timers    map[string]*time.Timer
	status    map[string]*keyStatus
	closed    bool
	wg        sync.WaitGroup

	// passes and retries count finished passes and failed ones since New,
	// for Stats.
	passes, retries uint64
}

type keyStatus struct {
	attempts int
	lastErr  error
	// passes counts finished passes; started counts started ones. A
	// waiter that added the key at started=n waits for passes > n.
	started, passes uint64
	lastPassErr     error
	waiters         []chan struct{}
}

// New builds a queue; nothing runs until Run.
func New(cfg Config) (*Queue, error) {
	if cfg.Reconcile == nil {
		return nil, fmt.Errorf("reconcile: no Reconcile function")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.BaseDelay <= 0 {
		cfg.BaseDelay = 50 * time.Millisecond
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = 30 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	q := &Queue{
		cfg: cfg, log: log,
		queued: map[string]bool{}, running: map[string]bool{}, dirty: map[string]bool{}, forgotten: map[string]bool{},
		timers: map[string]*time.Timer{}, status: map[string]*keyStatus{},
	}
	q.cond = sync.NewCond(&q.mu)
	return q, nil
}

// Run starts the workers; they stop when ctx ends, each after its current
// pass (which sees ctx cancelled). Run returns at once; Wait waits for the
// workers.
func (q *Queue) Run(ctx context.Context) {
	for range q.cfg.Workers {
		q.wg.Add(1)
		go func() {
			defer q.wg.Done()
			q.work(ctx)
		}()
	}
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		<-ctx.Done()
		q.mu.Lock()
		q.closed = true
		for k, t := range q.timers {
			t.Stop()
			delete(q.timers, k)
		}
		// Waiters learn that no pass will come.
		for _, st := range q.status {
			for _, w := range st.waiters {
				close(w)
			}
			st.waiters = nil
		}
		q.cond.Broadcast()
		q.mu.Unlock()
	}()
}

// Wait blocks until every goroutine Run started has returned.
func (q *Queue) Wait() { q.wg.Wait() }

// Add asks for a pass over key. Adds of a key that is already queued
// coalesce; a key added during its own pass gets one more pass after it.
func (q *Queue) Add(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(key)
}

func (q *Queue) addLocked(key string) {
	if q.closed {
		return
	}
	if t, ok := q.timers[key]; ok {
		t.Stop()
		delete(q.timers, key)
	}
	switch {
	case q.running[key]:
		q.dirty[key] = true
	case !q.queued[key]:
		q.queued[key] = true
		q.ready = append(q.ready, key)
		q.cond.Signal()
	}
}

// AddAndWait adds key and waits for a pass over it that started after the
// call, returning that pass's error. The pass runs whatever happens to ctx:
// the desired state is already recorded, ctx only bounds the wait.
func (q *Queue) AddAndWait(ctx context.Context, key string) error {
	q.mu.Lock()
	st := q.statusLocked(key)
	// The next pass to start is number started+1, whether or not one is
	// running now: a pass in flight may have read the store before the
	// caller's write, so only the one after it counts.
	want := st.started + 1
	q.addLocked(key)
	err := q.waitLocked(ctx, key, func() bool { return st.passes >= want })
	if err == nil {
		err = st.lastPassErr
	}
	q.mu.Unlock()
	return err
}

// Exclusive runs fn in key's slot: it waits until no pass over key runs,
// keeps passes off key while fn runs (an Add meanwhile runs once fn is
// done), and returns fn's error. It is for one-off operations that must
// not overlap the key's passes, such as a snapshot of a volume whose
// reconciler may be calling its plugin.
func (q *Queue) Exclusive(ctx context.Context, key string, fn func() error) error {
	q.mu.Lock()
	if err := q.waitLocked(ctx, key, func() bool { return !q.running[key] }); err != nil {
		q.mu.Unlock()
		return err
	}
	q.running[key] = true
	q.mu.Unlock()

	err := fn()

	q.mu.Lock()
	delete(q.running, key)
	if st := q.status[key]; st != nil {
		for _, w := range st.waiters {
			close(w)
		}
		st.waiters = nil
	}
	if q.dirty[key] {
		delete(q.dirty, key)
		q.addLocked(key)
	}
	q.mu.Unlock()
	return err
}

// Status reports what the queue knows of key.
func (q *Queue) Status(key string) Status {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.status[key]
	s := Status{Pending: q.queued[key] || q.running[key] || q.timers[key] != nil}
	if st != nil {
		s.Attempts, s.LastError = st.attempts, st.lastErr
	}
	return s
}

// Forget drops what the queue remembers of a key that no longer exists.
// A pass may forget its own key (the object is gone): the status goes
// when the pass ends, unless the key was added again meanwhile.
func (q *Queue) Forget(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running[key] {
		q.forgotten[key] = true
		return
	}
	q.forgetLocked(key)
}

func (q *Queue) forgetLocked(key string) {
	delete(q.forgotten, key)
	if q.running[key] || q.queued[key] || q.dirty[key] {
		return // added again: the object is back
	}
	if t := q.timers[key]; t != nil {
		t.Stop()
		delete(q.timers, key)
	}
	if st := q.status[key]; st != nil && len(st.waiters) == 0 {
		delete(q.status, key)
	}
}

// waitLocked waits until done holds, checking it whenever a pass over key
// or an Exclusive fn on it ends; it fails when the queue stops or ctx ends
// first. q.mu is held on entry and on return, whatever the outcome; done is
// called with it held.
func (q *Queue) waitLocked(ctx context.Context, key string, done func() bool) error {
	for !done() {
		if q.closed {
			return fmt.Errorf("reconcile %s: queue stopped", key)
		}
		w := make(chan struct{})
		st := q.statusLocked(key)
		st.waiters = append(st.waiters, w)
		q.mu.Unlock()
		var err error
		select {
		case <-w:
		case <-ctx.Done():
			err = fmt.Errorf("reconcile %s: %w", key, ctx.Err())
		}
		q.mu.Lock()
		if err != nil {
			return err
		}
	}
	return nil
}

func (q *Queue) statusLocked(key string) *keyStatus {
	st := q.status[key]
	if st == nil {
		st = &keyStatus{}
		q.status[key] = st
	}
	return st
}

func (q *Queue) work(ctx context.Context) {
	for {
		q.mu.Lock()
		for len(q.ready) == 0 && !q.closed {
			q.cond.Wait()
		}
		// closed is set by another goroutine after ctx ends; until then a
		// worker finishing its pass must not start a new one.
		if q.closed || ctx.Err() != nil {
			q.mu.Unlock()
			return
		}
		key := q.ready[0]
		q.ready = q.ready[1:]
		delete(q.queued, key)
		if q.running[key] {
			// Exclusive holds the key: the pass runs after it.
			q.dirty[key] = true
			q.mu.Unlock()
			continue
		}
		q.running[key] = true
		st := q.statusLocked(key)
		st.started++
		q.mu.Unlock()

		res, err := q.pass(ctx, key)

		q.mu.Lock()
		delete(q.running, key)
		st.passes++
		st.lastPassErr = err
		q.passes++
		for _, w := range st.waiters {
			close(w)
		}
		st.waiters = nil
		var after time.Duration
		if err != nil {
			st.attempts++
			st.lastErr = err
			q.retries++
			after = q.backoff(st.attempts)
			q.log.Warn("reconcile failed, will retry", "key", key, "attempt", st.attempts, "retry_in", after, "error", err)
		} else {
			st.attempts, st.lastErr = 0, nil
			after = res.RequeueAfter
		}
		switch {
		case q.dirty[key]:
			delete(q.dirty, key)
			q.addLocked(key)
		case q.forgotten[key]:
			q.forgetLocked(key)
		case after > 0 && !q.closed:
			// A timer that fired while an Add was stopping it runs late and
			// may find a newer timer in the map: it must not act for that one.
			var t *time.Timer
			t = time.AfterFunc(after, func() {
				q.mu.Lock()
				defer q.mu.Unlock()
				if q.timers[key] == t {
					delete(q.timers, key)
					q.addLocked(key)
				}
			})
			q.timers[key] = t
		}
		q.mu.Unlock()
	}
}

// pass runs one reconcile, turning a panic into an error: a bug in one
// object's reconciler must not take the agent down.
func (q *Queue) pass(ctx context.Context, key string) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reconcile %s panicked: %v", key, r)
		}
	}()
	return q.cfg.Reconcile(ctx, key)
}

func (q *Queue) backoff(attempts int) time.Duration {
	d := q.cfg.BaseDelay
	for i := 1; i < attempts && d < q.cfg.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, q.cfg.MaxDelay)
	if q.cfg.Jitter && d > 1 {
		d = d/2 + rand.N(d/2)
	}
	return d
}
