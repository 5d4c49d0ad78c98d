//go:build amd64 || arm64

package seccomp

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The benchmarks that need a filter install it in a helper process, never
// in the benchmark's own: filters only stack up.

// BenchmarkLaunch is a task's launch through a Go helper that execs
// /bin/true and is waited for, plain and with Install before the exec,
// alternating, so that a machine busy with something else slows both
// alike. It reports the median of each and their difference, which is
// what the filter adds to starting an exec task.
func BenchmarkLaunch(b *testing.B) {
	needRoot(b)
	var plain, filtered []time.Duration
	launch := func(policy string) time.Duration {
		start := time.Now()
		if out, err := runHelper(b, "exec", policy, "/bin/true"); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		return time.Since(start)
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			plain = append(plain, launch(policyNone))
			filtered = append(filtered, launch(policyDefault))
		} else {
			filtered = append(filtered, launch(policyDefault))
			plain = append(plain, launch(policyNone))
		}
	}
	p, f := median(plain), median(filtered)
	b.ReportMetric(float64(p.Nanoseconds()), "plain-ns/launch")
	b.ReportMetric(float64(f.Nanoseconds()), "filtered-ns/launch")
	b.ReportMetric(float64((f - p).Nanoseconds()), "filter-ns/launch")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkInstall is Install alone (building the program and the
// seccomp call), each time on a fresh thread of one helper.
func BenchmarkInstall(b *testing.B) {
	needRoot(b)
	reportHelper(b, "bench-install", "", strconv.Itoa(b.N))
}

// BenchmarkSyscall is what a call costs a task without and with the
// filter: getppid, which the kernel's action cache allows without running
// the filter, and personality(0xffffffff), whose argument the filter
// reads.
func BenchmarkSyscall(b *testing.B) {
	needRoot(b)
	for _, call := range []string{"getppid", "personality"} {
		for _, policy := range []string{policyNone, policyDefault} {
			b.Run(call+"/"+policy, func(b *testing.B) {
				reportHelper(b, "bench-syscall", policy, strconv.Itoa(b.N), call)
			})
		}
	}
}

// reportHelper runs a benchmark helper and reports the nanoseconds per
// operation it measured as the benchmark's own, without its start.
func reportHelper(b *testing.B, mode, policy string, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := helperCmd(ctx, b, mode, policy, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	ns, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(string(out), resultsPrefix)), 64)
	if err != nil {
		b.Fatalf("helper output %q: %v", out, err)
	}
	b.ReportMetric(ns, "ns/op")
}

// benchInstallMain installs the filter args[0] times, each on a thread of
// its own that ends with its goroutine, and prints ns per Install.
func benchInstallMain(args []string) int {
	n, err := strconv.Atoi(args[0])
	if err != nil {
		return fail("%v", err)
	}
	var total time.Duration
	for range n {
		done := make(chan error)
		go func() {
			// Install locks the goroutine to its thread for good, so the
			// thread ends with the goroutine.
			start := time.Now()
			err := Install(Policy{})
			total += time.Since(start)
			done <- err
		}()
		if err := <-done; err != nil {
			return fail("%v", err)
		}
	}
	fmt.Printf("%s%f\n", resultsPrefix, float64(total.Nanoseconds())/float64(n))
	return 0
}

// benchSyscallMain makes args[1] args[0] times under policy and prints ns
// per call.
func benchSyscallMain(policy string, args []string) int {
	n, err := strconv.Atoi(args[0])
	if err != nil {
		return fail("%v", err)
	}
	if err := setUp(policy); err != nil {
		return fail("%v", err)
	}
	nr, arg := uintptr(unix.SYS_GETPPID), uintptr(0)
	if args[1] == "personality" {
		nr, arg = unix.SYS_PERSONALITY, 0xffffffff
	}
	start := time.Now()
	for range n {
		unix.RawSyscall(nr, arg, 0, 0)
	}
	elapsed := time.Since(start)
	fmt.Printf("%s%f\n", resultsPrefix, float64(elapsed.Nanoseconds())/float64(n))
	return 0
}
