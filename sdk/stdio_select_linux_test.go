//go:build !portable

package sdk

import (
	"os"
	"testing"
)

// swapStdio must replace and then restore the process's stdio; it runs in a
// subprocess-like way here, so it saves and restores the real ones itself.
func TestSwapStdioRestores(t *testing.T) {
	_, w := pipe(t)
	origOut, origErr := os.Stdout, os.Stderr
	t.Cleanup(func() { os.Stdout, os.Stderr = origOut, origErr })
	os.Stdout, os.Stderr = w, w

	s, err := swapStdio()
	if err != nil {
		t.Fatal(err)
	}
	if os.Stdout == w || os.Stderr == w || !isNonblock(t, os.Stdout) {
		s.restore()
		t.Fatal("stdio not replaced by non-blocking writers")
	}
	s.restore()
	if os.Stdout != w || os.Stderr != w {
		t.Fatal("stdio not restored")
	}
}
