package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// flushKey is reconciled by every test queue without touching the test's
// counters. With one worker, a pass over it starts only after the passes
// queued before it and the bookkeeping of the pass running now, so
// AddAndWait(flushKey) is a barrier: after it, Status of any other key says
// whether a further pass is pending.
const flushKey = "\x00flush"

// funcs routes passes to per-key functions; flushKey always succeeds.
type funcs map[string]Func

func (f funcs) reconcile(ctx context.Context, key string) (Result, error) {
	if key == flushKey {
		return Result{}, nil
	}
	fn, ok := f[key]
	if !ok {
		return Result{}, fmt.Errorf("no func for key %q", key)
	}
	return fn(ctx, key)
}

// startQueue runs a queue until the test ends; the returned stop cancels it
// and waits for its goroutines, and may be called before that.
func startQueue(t *testing.T, cfg Config) (q *Queue, ctx context.Context, stop func()) {
	t.Helper()
	q, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	q.Run(ctx)
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); q.Wait() }) }
	t.Cleanup(stop)
	return q, ctx, stop
}

func flush(t *testing.T, q *Queue) {
	t.Helper()
	if err := q.AddAndWait(context.Background(), flushKey); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

func TestNewRequiresFunc(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without Reconcile succeeded")
	}
}

func TestAddsCoalesceWhileQueued(t *testing.T) {
	var mu sync.Mutex
	var order []string
	record := func(_ context.Context, key string) (Result, error) {
		mu.Lock()
		order = append(order, key)
		mu.Unlock()
		return Result{}, nil
	}
	q, err := New(Config{Workers: 1, Reconcile: funcs{"k": record, "other": record}.reconcile})
	if err != nil {
		t.Fatal(err)
	}
	// Adds before Run all find the key queued.
	for range 10 {
		q.Add("k")
	}
	q.Add("other")
	q.Add("k")
	if st := q.Status("k"); !st.Pending {
		t.Errorf("queued key: Status %+v, want Pending", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); q.Wait() }()
	q.Run(ctx)
	flush(t, q)

	mu.Lock()
	defer mu.Unlock()
	if want := []string{"k", "other"}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("passes %q, want %q: adds of a queued key must coalesce", order, want)
	}
	if st := q.Status("k"); st.Pending || st.Attempts != 0 || st.LastError != nil {
		t.Errorf("after its pass: Status %+v, want zero", st)
	}
}

func TestAddDuringPassRunsExactlyOnceMore(t *testing.T) {
	started := make(chan int, 10)
	release := make(chan struct{})
	var passes atomic.Int32
	fn := func(_ context.Context, _ string) (Result, error) {
		n := int(passes.Add(1))
		started <- n
		if n == 1 {
			<-release
		}
		return Result{}, nil
	}
	q, _, _ := startQueue(t, Config{Workers: 1, Reconcile: funcs{"k": fn}.reconcile})

	q.Add("k")
	if n := <-started; n != 1 {
		t.Fatalf("first pass is number %d", n)
	}
	if st := q.Status("k"); !st.Pending {
		t.Errorf("running key: Status %+v, want Pending", st)
	}
	for range 5 {
		q.Add("k")
	}
	close(release)
	if n := <-started; n != 2 {
		t.Fatalf("second pass is number %d", n)
	}
	flush(t, q)
	if got := passes.Load(); got != 2 {
		t.Fatalf("%d passes, want 2: adds during a pass are one more pass", got)
	}
	if st := q.Status("k"); st.Pending {
		t.Errorf("after the extra pass: Status %+v, want not Pending", st)
	}
}

// TestOnePassPerKeyAtATime hammers a few keys from many goroutines: a key's
// passes never overlap, different keys do, up to Workers, and every key has
// a pass after its last Add.
func TestOnePassPerKeyAtATime(t *testing.T) {
	const (
		workers    = 4
		keys       = 6
		adders     = 32
		addsPerGor = 300
	)
	var (
		inflight [keys]atomic.Int32
		passes   [keys]atomic.Int32
		total    atomic.Int32
		maxTotal atomic.Int32
		overlap  atomic.Int32
	)
	fn := func(_ context.Context, key string) (Result, error) {
		var i int
		fmt.Sscanf(key, "k%d", &i)
		if inflight[i].Add(1) != 1 {
			overlap.Add(1)
		}
		n := total.Add(1)
		for {
			m := maxTotal.Load()
			if n <= m || maxTotal.CompareAndSwap(m, n) {
				break
			}
		}
		// Give another worker the chance to take the same key, were the
		// queue to allow it.
		for range 50 {
			if inflight[i].Load() > 1 {
				overlap.Add(1)
			}
		}
		total.Add(-1)
		inflight[i].Add(-1)
		passes[i].Add(1)
		return Result{}, nil
	}
	f := funcs{}
	for i := range keys {
		f[fmt.Sprintf("k%d", i)] = fn
	}
	q, _, _ := startQueue(t, Config{Workers: workers, Reconcile: f.reconcile})

	var wg sync.WaitGroup
	for g := range adders {
		wg.Go(func() {
			for j := range addsPerGor {
				q.Add(fmt.Sprintf("k%d", (g+j)%keys))
			}
		})
	}
	wg.Wait()
	// Waiting on every key makes sure the final adds have had their pass.
	for i := range keys {
		if err := q.AddAndWait(context.Background(), fmt.Sprintf("k%d", i)); err != nil {
			t.Fatal(err)
		}
	}

	if n := overlap.Load(); n != 0 {
		t.Fatalf("%d times a key had two passes at once", n)
	}
	if m := maxTotal.Load(); m > workers {
		t.Fatalf("%d passes at once with %d workers", m, workers)
	}
	sum := int32(0)
	for i := range keys {
		sum += passes[i].Load()
		if passes[i].Load() == 0 {
			t.Errorf("key k%d never reconciled", i)
		}
	}
	if sum > adders*addsPerGor+keys {
		t.Errorf("%d passes for %d adds", sum, adders*addsPerGor+keys)
	}
	t.Logf("%d passes for %d adds, at most %d at once", sum, adders*addsPerGor+keys, maxTotal.Load())
}

func TestKeysRunInParallelUpToWorkers(t *testing.T) {
	const workers = 3
	started := make(chan string, 5)
	release := make(chan struct{})
	var inflight, maxInflight atomic.Int32
	fn := func(_ context.Context, key string) (Result, error) {
		n := inflight.Add(1)
		for {
			m := maxInflight.Load()
			if n <= m || maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		started <- key
		<-release
		inflight.Add(-1)
		return Result{}, nil
	}
	f := funcs{}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		f[k] = fn
	}
	q, _, _ := startQueue(t, Config{Workers: workers, Reconcile: f.reconcile})
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		q.Add(k)
	}
	// Three passes block at once: the keys do run in parallel.
	for range workers {
		<-started
	}
	close(release)
	for range 5 - workers {
		<-started
	}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		if err := q.AddAndWait(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	if m := maxInflight.Load(); m != workers {
		t.Fatalf("at most %d passes at once, want %d", m, workers)
	}
}

// TestRetryBackoff runs in a synctest bubble: time only moves when every
// goroutine waits, so the retry delays are exact.
func TestRetryBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const failures = 6
		base, maxDelay := 10*time.Millisecond, 50*time.Millisecond
		var (
			q       *Queue
			times   []time.Time
			statusd []Status
		)
		done := make(chan struct{})
		fn := func(_ context.Context, key string) (Result, error) {
			times = append(times, time.Now())
			statusd = append(statusd, q.Status(key))
			n := len(times)
			if n <= failures {
				return Result{}, fmt.Errorf("failure %d", n)
			}
			close(done)
			return Result{}, nil
		}
		q, _, _ = startQueue(t, Config{Workers: 1, BaseDelay: base, MaxDelay: maxDelay, Reconcile: funcs{"k": fn}.reconcile})

		err := q.AddAndWait(context.Background(), "k")
		if err == nil || err.Error() != "failure 1" {
			t.Fatalf("AddAndWait = %v, want the first pass's error", err)
		}
		st := q.Status("k")
		if st.Attempts != 1 || st.LastError == nil || st.LastError.Error() != "failure 1" || !st.Pending {
			t.Fatalf("after one failure: Status %+v, want 1 attempt, its error, and a retry pending", st)
		}
		<-done
		flush(t, q)

		want := []time.Duration{10, 20, 40, 50, 50, 50} // ms
		for i, w := range want {
			if got := times[i+1].Sub(times[i]); got != w*time.Millisecond {
				t.Errorf("retry %d came after %v, want %v", i+1, got, w*time.Millisecond)
			}
		}
		// Each pass sees the failures before it.
		for i, s := range statusd {
			if s.Attempts != i || (i == 0) != (s.LastError == nil) || !s.Pending {
				t.Errorf("pass %d saw Status %+v, want %d attempts", i+1, s, i)
			}
			if i > 0 && s.LastError.Error() != fmt.Sprintf("failure %d", i) {
				t.Errorf("pass %d saw LastError %v", i+1, s.LastError)
			}
		}
		if st := q.Status("k"); st.Attempts != 0 || st.LastError != nil || st.Pending {
			t.Fatalf("after success: Status %+v, want zero", st)
		}
	})
}

func TestBackoffTable(t *testing.T) {
	q, err := New(Config{Reconcile: funcs{}.reconcile, BaseDelay: time.Second, MaxDelay: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{1, 2, 4, 5, 5}
	for i, w := range want {
		if got := q.backoff(i + 1); got != w*time.Second {
			t.Errorf("backoff(%d) = %v, want %v", i+1, got, w*time.Second)
		}
	}
	if got := q.backoff(1000); got != 5*time.Second {
		t.Errorf("backoff(1000) = %v, want the maximum", got)
	}
	d, err := New(Config{Reconcile: funcs{}.reconcile})
	if err != nil {
		t.Fatal(err)
	}
	if d.backoff(1) != 50*time.Millisecond || d.backoff(100) != 30*time.Second || d.cfg.Workers != 4 {
		t.Errorf("defaults: backoff %v..%v, %d workers", d.backoff(1), d.backoff(100), d.cfg.Workers)
	}
}

func TestAddCancelsRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var passes atomic.Int32
		fn := func(context.Context, string) (Result, error) {
			if passes.Add(1) == 1 {
				return Result{}, errors.New("not yet")
			}
			return Result{}, nil
		}
		q, _, _ := startQueue(t, Config{Workers: 1, BaseDelay: time.Hour, Reconcile: funcs{"k": fn}.reconcile})
		if err := q.AddAndWait(context.Background(), "k"); err == nil {
			t.Fatal("first pass did not fail")
		}
		if st := q.Status("k"); !st.Pending || st.Attempts != 1 {
			t.Fatalf("waiting for retry: Status %+v", st)
		}
		// An Add is news: the key runs now, not in an hour.
		start := time.Now()
		if err := q.AddAndWait(context.Background(), "k"); err != nil {
			t.Fatalf("second pass: %v", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("second pass after %v, want at once", d)
		}
		time.Sleep(2 * time.Hour)
		flush(t, q)
		if n := passes.Load(); n != 2 {
			t.Fatalf("%d passes, want 2: the cancelled retry ran", n)
		}
		if st := q.Status("k"); st != (Status{}) {
			t.Fatalf("Status %+v, want zero", st)
		}
	})
}

func TestRequeueAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var times []time.Time
		passed := make(chan struct{}, 10)
		fn := func(context.Context, string) (Result, error) {
			times = append(times, time.Now())
			passed <- struct{}{}
			if len(times) == 1 {
				return Result{RequeueAfter: time.Minute}, nil
			}
			return Result{}, nil
		}
		q, _, _ := startQueue(t, Config{Workers: 1, Reconcile: funcs{"k": fn}.reconcile})
		q.Add("k")
		<-passed
		flush(t, q)
		if st := q.Status("k"); !st.Pending || st.Attempts != 0 || st.LastError != nil {
			t.Fatalf("requeued key: Status %+v, want Pending without error", st)
		}
		<-passed
		if d := times[1].Sub(times[0]); d != time.Minute {
			t.Fatalf("requeued pass after %v, want 1m", d)
		}
		time.Sleep(time.Hour)
		flush(t, q)
		if len(times) != 2 {
			t.Fatalf("%d passes, want 2", len(times))
		}
		if st := q.Status("k"); st.Pending {
			t.Fatalf("Status %+v, want not Pending", st)
		}
	})
}

func TestAddBeforeRequeueRunsAtOnceAndCancelsTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var times []time.Time
		fn := func(context.Context, string) (Result, error) {
			times = append(times, time.Now())
			if len(times) == 1 {
				return Result{RequeueAfter: time.Minute}, nil
			}
			return Result{}, nil
		}
		q, _, _ := startQueue(t, Config{Workers: 1, Reconcile: funcs{"k": fn}.reconcile})
		if err := q.AddAndWait(context.Background(), "k"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		if err := q.AddAndWait(context.Background(), "k"); err != nil {
			t.Fatal(err)
		}
		if d := times[1].Sub(times[0]); d != 10*time.Second {
			t.Fatalf("second pass after %v, want 10s (the Add, not the timer)", d)
		}
		// Past the requeue deadline: the timer was cancelled, not just
		// overtaken.
		time.Sleep(time.Hour)
		flush(t, q)
		if len(times) != 2 {
			t.Fatalf("%d passes, want 2: the cancelled requeue ran", len(times))
		}
		if st := q.Status("k"); st.Pending {
			t.Fatalf("Status %+v, want not Pending", st)
		}
	})
}

// versionErr is what a pass saw of the desired state.
type versionErr struct{ v int64 }

func (e versionErr) Error() string { return fmt.Sprintf("pass saw version %d", e.v) }

// TestAddAndWaitSkipsPassInFlight: a pass that started before AddAndWait
// may have read the store before the caller's write, so it must not answer
// the caller.
func TestAddAndWaitSkipsPassInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			version    atomic.Int64 // the "store": what the caller wrote
			sawCurrent atomic.Int32 // passes that read version 1
		)
		started := make(chan struct{}, 10)
		release := make(chan struct{})
		fn := func(context.Context, string) (Result, error) {
			v := version.Load()
			if v == 1 {
				sawCurrent.Add(1)
			}
			started <- struct{}{}
			if v == 0 {
				<-release
				// A stale pass fails, so returning its error to the waiter
				// would be visible.
				return Result{}, versionErr{v}
			}
			return Result{}, nil
		}
		q, _, _ := startQueue(t, Config{Workers: 2, BaseDelay: time.Hour, Reconcile: funcs{"k": fn}.reconcile})
		q.Add("k")
		<-started // pass 1 has read version 0 and blocks

		version.Store(1)
		errc := make(chan error, 1)
		go func() { errc <- q.AddAndWait(context.Background(), "k") }()
		synctest.Wait() // AddAndWait is now waiting
		select {
		case err := <-errc:
			t.Fatalf("AddAndWait returned %v while the only pass was one that started before it", err)
		default:
		}
		close(release)
		err := <-errc
		if err != nil {
			t.Fatalf("AddAndWait = %v, want the result of the pass that read version 1", err)
		}
		if n := sawCurrent.Load(); n != 1 {
			t.Fatalf("%d passes read version 1 when AddAndWait returned, want 1", n)
		}
	})
}

func TestAddAndWaitWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var kPasses atomic.Int32
		f := funcs{
			"block": func(context.Context, string) (Result, error) { <-release; return Result{}, nil },
			"k": func(context.Context, string) (Result, error) {
				return Result{}, fmt.Errorf("pass %d", kPasses.Add(1))
			},
		}
		q, _, _ := startQueue(t, Config{Workers: 1, BaseDelay: time.Hour, Reconcile: f.reconcile})
		q.Add("block")
		q.Add("k") // queued behind block
		errc := make(chan error, 1)
		go func() { errc <- q.AddAndWait(context.Background(), "k") }()
		synctest.Wait()
		close(release)
		// The queued pass had not started at the call: it is the one.
		if err := <-errc; err == nil || err.Error() != "pass 1" {
			t.Fatalf("AddAndWait = %v, want pass 1's error", err)
		}
		if n := kPasses.Load(); n != 1 {
			t.Fatalf("%d passes of k, want 1", n)
		}
	})
}

func TestAddAndWaitHonoursCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var passes atomic.Int32
		fn := func(context.Context, string) (Result, error) {
			if passes.Add(1) == 1 {
				<-release
			}
			return Result{}, nil
		}
		q, _, _ := startQueue(t, Config{Workers: 1, Reconcile: funcs{"k": fn}.reconcile})
		q.Add("k")
		synctest.Wait() // pass 1 blocks

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := q.AddAndWait(ctx, "k")
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Fatalf("AddAndWait with a 1s deadline = %v after %v", err, time.Since(start))
		}
		// The pass the caller asked for still happens: the wait was bounded,
		// not the work.
		close(release)
		synctest.Wait()
		if n := passes.Load(); n != 2 {
			t.Fatalf("%d passes, want 2: an abandoned AddAndWait still gets its pass", n)
		}
	})
}

func TestAddAndWaitReturnsWhenQueueStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var passes atomic.Int32
		fn := func(ctx context.Context, _ string) (Result, error) {
			passes.Add(1)
			<-ctx.Done()
			return Result{}, ctx.Err()
		}
		q, _, stop := startQueue(t, Config{Workers: 1, Reconcile: funcs{"k": fn, "j": fn}.reconcile})
		q.Add("j") // holds the only worker until the queue stops
		synctest.Wait()

		errc := make(chan error, 2)
		go func() { errc <- q.AddAndWait(context.Background(), "k") }() // queued
		go func() { errc <- q.AddAndWait(context.Background(), "j") }() // dirty
		synctest.Wait()
		stop()
		synctest.Wait()
		for range 2 {
			select {
			case err := <-errc:
				if err == nil || !strings.Contains(err.Error(), "queue stopped") {
					t.Errorf("AddAndWait after stop = %v, want queue stopped", err)
				}
			default:
				t.Fatal("AddAndWait still blocked after the queue stopped")
			}
		}
		// Workers stop after their current pass: neither the queued key nor
		// the one added during the pass starts once ctx has ended.
		if n := passes.Load(); n != 1 {
			t.Errorf("%d passes, want only the one running at stop", n)
		}
		// A stopped queue answers at once and takes no work.
		if err := q.AddAndWait(context.Background(), "new"); err == nil || !strings.Contains(err.Error(), "queue stopped") {
			t.Errorf("AddAndWait on a stopped queue = %v, want queue stopped", err)
		}
		q.Add("new")
		if st := q.Status("new"); st.Pending {
			t.Errorf("stopped queue: Status %+v, want not Pending", st)
		}
	})
}

func TestPanicIsAFailedPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var passes atomic.Int32
		f := funcs{
			"k": func(context.Context, string) (Result, error) {
				if passes.Add(1) == 1 {
					panic("boom")
				}
				return Result{}, nil
			},
			"other": func(context.Context, string) (Result, error) { return Result{}, nil },
		}
		q, _, _ := startQueue(t, Config{Workers: 1, BaseDelay: time.Second, Reconcile: f.reconcile})
		err := q.AddAndWait(context.Background(), "k")
		if err == nil || !strings.Contains(err.Error(), "panicked") || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("AddAndWait on a panicking pass = %v", err)
		}
		if st := q.Status("k"); st.Attempts != 1 || st.LastError == nil || !st.Pending {
			t.Fatalf("after panic: Status %+v, want a failed attempt and a retry", st)
		}
		// The worker survived: other keys run, and the retry succeeds.
		if err := q.AddAndWait(context.Background(), "other"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // past the retry at 1s
		flush(t, q)
		if st := q.Status("k"); passes.Load() != 2 || st != (Status{}) {
			t.Fatalf("after retry: %d passes, Status %+v", passes.Load(), st)
		}
	})
}

func TestStatusUnknownAndForget(t *testing.T) {
	q, _, _ := startQueue(t, Config{Workers: 1, BaseDelay: time.Hour, Reconcile: funcs{
		"k": func(context.Context, string) (Result, error) { return Result{}, errors.New("no") },
	}.reconcile})
	if st := q.Status("nobody"); st != (Status{}) {
		t.Fatalf("unknown key: Status %+v", st)
	}
	if err := q.AddAndWait(context.Background(), "k"); err == nil {
		t.Fatal("pass did not fail")
	}
	q.Forget("k")
	if st := q.Status("k"); st.Attempts != 0 || st.LastError != nil {
		t.Fatalf("forgotten key: Status %+v", st)
	}
}

// TestFiredTimerDoesNotActForANewerOne: a requeue timer can fire while an
// Add holds the lock to stop it; Stop then fails and the callback runs
// later, possibly after the key's next pass has set a new timer. The old
// callback must not take the new timer's place. Which interleaving happens
// is up to the scheduler, so the test makes many keys race; each key's
// second Add is done under the queue's lock so the test knows whether it
// came between the first and second pass, when no third pass may follow.
func TestFiredTimerDoesNotActForANewerOne(t *testing.T) {
	const n = 5000
	type keyRec struct {
		passes atomic.Int32
		strict atomic.Bool // the second Add came before pass 2 was taken
	}
	recs := make([]keyRec, n)
	var extra atomic.Int32
	firstDone := make(chan int, n)
	var secondDone sync.WaitGroup
	secondDone.Add(n)
	fn := func(_ context.Context, key string) (Result, error) {
		var i int
		fmt.Sscan(key, &i)
		switch recs[i].passes.Add(1) {
		case 1:
			firstDone <- i
			return Result{RequeueAfter: time.Nanosecond}, nil
		case 2:
			secondDone.Done()
		default:
			if recs[i].strict.Load() {
				extra.Add(1)
			}
		}
		return Result{RequeueAfter: time.Hour}, nil
	}
	q, _, _ := startQueue(t, Config{Workers: 8, Reconcile: fn})
	go func() {
		for i := range n {
			q.Add(fmt.Sprint(i))
		}
	}()
	for range n {
		i := <-firstDone
		key := fmt.Sprint(i)
		q.mu.Lock()
		// Pass 1 done and pass 2 not taken: whatever timer fires, pass 2
		// is the last pass for an hour.
		strict := !q.running[key] && recs[i].passes.Load() == 1
		recs[i].strict.Store(strict)
		q.addLocked(key)
		q.mu.Unlock()
	}
	secondDone.Wait()
	if e := extra.Load(); e != 0 {
		t.Fatalf("%d keys of %d had a third pass: a fired timer acted for a newer one", e, n)
	}
}

// TestExclusiveNeverOverlapsPasses: a one-off operation on a key waits for
// the key's pass, passes wait for it, and an Add during it runs afterwards.
func TestExclusiveNeverOverlapsPasses(t *testing.T) {
	var inFlight, overlaps, passes atomic.Int64
	q, err := New(Config{Workers: 4, Reconcile: func(ctx context.Context, key string) (Result, error) {
		if inFlight.Add(1) > 1 {
			overlaps.Add(1)
		}
		passes.Add(1)
		time.Sleep(100 * time.Microsecond)
		inFlight.Add(-1)
		return Result{}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); q.Wait() }()
	q.Run(ctx)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 200 {
				q.Add("k")
			}
		}()
		go func() {
			defer wg.Done()
			for range 50 {
				if err := q.Exclusive(ctx, "k", func() error {
					if inFlight.Add(1) > 1 {
						overlaps.Add(1)
					}
					inFlight.Add(-1)
					return nil
				}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := q.AddAndWait(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d overlaps of passes and exclusive operations", n)
	}
	if passes.Load() == 0 {
		t.Fatal("no pass ran")
	}
	if err := q.Exclusive(ctx, "k", func() error { return errors.New("boom") }); err == nil || err.Error() != "boom" {
		t.Fatalf("Exclusive returned %v, want fn's error", err)
	}
}
