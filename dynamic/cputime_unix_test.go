//go:build unix

package dynamic

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time. Wall-clock ns/op on a
// shared two-core machine mostly measures the neighbours; CPU time per op
// shows what the code itself costs.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
