package csi

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Defaults of RetryPolicy. They keep a whole failed call (five attempts) at
// about two seconds of waiting: long enough to ride out a plugin that is
// restarting, short enough that a fingerprint of a dead plugin still reports
// it unhealthy well within one interval.
const (
	DefaultMaxAttempts    = 5
	DefaultBaseDelay      = 100 * time.Millisecond
	DefaultMaxDelay       = 2 * time.Second
	DefaultAttemptTimeout = 30 * time.Second
)

// RetryPolicy says how Client retries one CSI call. The zero value means
// "use the defaults" field by field, so callers set only what they change.
type RetryPolicy struct {
	// MaxAttempts bounds the number of attempts, the first included. 1
	// disables retries.
	MaxAttempts int
	// BaseDelay is the wait after the first failed attempt; each further
	// failure doubles it, up to MaxDelay.
	BaseDelay time.Duration
	// MaxDelay caps a single wait.
	MaxDelay time.Duration
	// AttemptTimeout bounds one attempt. An attempt that runs out of it
	// fails with DEADLINE_EXCEEDED and is retried while the caller's context
	// still has time left.
	AttemptTimeout time.Duration
}

// DefaultRetryPolicy returns the policy a zero RetryPolicy stands for.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		MaxAttempts:    DefaultMaxAttempts,
		BaseDelay:      DefaultBaseDelay,
		MaxDelay:       DefaultMaxDelay,
		AttemptTimeout: DefaultAttemptTimeout,
	}
}

// withDefaults fills unset (zero or negative) fields from the defaults.
func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = d.BaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = d.MaxDelay
	}
	if p.MaxDelay < p.BaseDelay {
		p.MaxDelay = p.BaseDelay
	}
	if p.AttemptTimeout <= 0 {
		p.AttemptTimeout = d.AttemptTimeout
	}
	return p
}

// backoffCeiling is the un-jittered wait after failed attempt number attempt
// (0 for the first failure): BaseDelay·2^attempt, capped at MaxDelay.
//
// The doubling stops as soon as the cap is reached, so the exponent never
// exceeds 63 whatever attempt is: swarmkit computed `base << attempt` and
// overflowed into zero and negative waits at attempt 37, which turned its
// retry queue into a hot loop.
func (p RetryPolicy) backoffCeiling(attempt int) time.Duration {
	p = p.withDefaults()
	d := p.BaseDelay
	for i := 0; i < attempt && d < p.MaxDelay; i++ {
		if d > p.MaxDelay/2 {
			return p.MaxDelay
		}
		d *= 2
	}
	return min(d, p.MaxDelay)
}

// Backoff returns how long to wait after failed attempt number attempt (0
// for the first failure). It is the ceiling with "equal jitter": a uniform
// value in [ceiling/2, ceiling], so that clients retrying together spread
// out while the wait still grows with every failure.
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	c := p.backoffCeiling(attempt)
	half := c / 2
	if half <= 0 {
		return c
	}
	return half + rand.N(c-half+1)
}

// Retryable reports whether a failed CSI call is worth retrying. Only three
// codes are: ABORTED (the CSI spec's "an operation for this volume is in
// progress, retry with backoff"), UNAVAILABLE (the plugin is not listening,
// e.g. restarting) and DEADLINE_EXCEEDED. Everything else, UNIMPLEMENTED,
// INVALID_ARGUMENT and ALREADY_EXISTS in particular, is an answer that will
// not change on retry. Errors that carry no gRPC status are not retried.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The caller's own context ended; a retry could not run anyway.
		return false
	}
	s, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch s.Code() {
	case codes.Aborted, codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}
