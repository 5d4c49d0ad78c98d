package dynamic

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time (see the unix version).
func cpuTime(b *testing.B) time.Duration {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		b.Fatalf("GetCurrentProcess: %v", err)
	}
	var created, exited, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		b.Fatalf("GetProcessTimes: %v", err)
	}
	// Durations in 100 ns units, not dates: Filetime.Nanoseconds would
	// subtract the 1601 epoch.
	ticks := func(f syscall.Filetime) time.Duration {
		return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
	}
	return ticks(kernel) + ticks(user)
}
