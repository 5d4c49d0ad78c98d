package csi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestBackoffCappedUpToAttempt100(t *testing.T) {
	policies := []RetryPolicy{
		{}, // defaults
		{BaseDelay: 100 * time.Millisecond, MaxDelay: 10 * time.Minute}, // swarmkit's numbers
		{BaseDelay: time.Hour, MaxDelay: math.MaxInt64},                 // a cap that never binds
		{BaseDelay: 1, MaxDelay: math.MaxInt64 - 1},
		{BaseDelay: time.Second, MaxDelay: time.Millisecond}, // inverted: max raised to base
	}
	for _, p := range policies {
		t.Run(fmt.Sprintf("base=%v,max=%v", p.BaseDelay, p.MaxDelay), func(t *testing.T) {
			eff := p.withDefaults()
			prev := time.Duration(0)
			for attempt := 0; attempt <= 100; attempt++ {
				c := p.backoffCeiling(attempt)
				if c <= 0 || c > eff.MaxDelay {
					t.Fatalf("attempt %d: ceiling %v outside (0, %v]", attempt, c, eff.MaxDelay)
				}
				if c < prev {
					t.Fatalf("attempt %d: ceiling %v shrank from %v", attempt, c, prev)
				}
				prev = c
				b := p.Backoff(attempt)
				if b < c/2 || b > c {
					t.Fatalf("attempt %d: backoff %v outside [%v, %v]", attempt, b, c/2, c)
				}
			}
			if got := p.backoffCeiling(0); got != eff.BaseDelay {
				t.Errorf("first wait %v, want base %v", got, eff.BaseDelay)
			}
		})
	}
	// The cap is reached and held: swarmkit's shift turned into a hot
	// loop (zero or negative waits) at attempt 37.
	p := RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: 10 * time.Minute}
	for _, attempt := range []int{37, 63, 64, 100, math.MaxInt} {
		if got := p.backoffCeiling(attempt); got != 10*time.Minute {
			t.Errorf("attempt %d: ceiling %v, want the 10m cap", attempt, got)
		}
	}
	if got := p.backoffCeiling(3); got != 800*time.Millisecond {
		t.Errorf("attempt 3: ceiling %v, want 800ms", got)
	}
}

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{status.Error(codes.Aborted, "x"), true},
		{status.Error(codes.Unavailable, "x"), true},
		{status.Error(codes.DeadlineExceeded, "x"), true},
		{fmt.Errorf("wrapped: %w", status.Error(codes.Unavailable, "x")), true},
		{status.Error(codes.Unimplemented, "x"), false},
		{status.Error(codes.InvalidArgument, "x"), false},
		{status.Error(codes.AlreadyExists, "x"), false},
		{status.Error(codes.ResourceExhausted, "x"), false},
		{status.Error(codes.Canceled, "x"), false},
		{context.DeadlineExceeded, false},
		{errors.New("plain"), false},
	} {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("Retryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func BenchmarkBackoff(b *testing.B) {
	p := DefaultRetryPolicy()
	for i := 0; b.Loop(); i++ {
		_ = p.Backoff(i % 100)
	}
}
