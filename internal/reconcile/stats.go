package reconcile

// Stats is a point-in-time view of a queue, for metrics. The agent reads it
// when it is scraped, so the queue keeps no metric state of its own and
// needs no metrics library.
type Stats struct {
	// Depth counts keys waiting for a worker.
	Depth int
	// Running counts keys a worker (or Exclusive) holds now.
	Running int
	// Delayed counts keys waiting for a retry or a RequeueAfter timer.
	Delayed int
	// Passes counts finished passes since New; Retries the failed ones,
	// each of which schedules a retry (unless the key is added again
	// first).
	Passes, Retries uint64
}

// Stats reports the queue's depth and pass counts.
func (q *Queue) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return Stats{
		Depth: len(q.ready), Running: len(q.running), Delayed: len(q.timers),
		Passes: q.passes, Retries: q.retries,
	}
}
