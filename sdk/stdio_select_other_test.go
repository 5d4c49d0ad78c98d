//go:build !linux || portable

package sdk

import (
	"os"
	"testing"
)

// Where stdio cannot be made non-blocking of its own (and on Linux under
// the portable tag), swapStdio keeps the process's stdio as it is, without
// an error (which servePlugin would log as a warning at every launch),
// and restore leaves it so.
func TestSwapStdioKeepsStdio(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	origOut, origErr := os.Stdout, os.Stderr
	t.Cleanup(func() { os.Stdout, os.Stderr = origOut, origErr })
	os.Stdout, os.Stderr = w, w

	s, err := swapStdio()
	if err != nil {
		t.Fatal(err)
	}
	if os.Stdout != w || os.Stderr != w || len(s.opened) != 0 {
		s.restore()
		t.Fatal("stdio replaced")
	}
	s.restore()
	if os.Stdout != w || os.Stderr != w {
		t.Fatal("stdio changed by restore")
	}
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatalf("write to the kept pipe: %v", err)
	}
}
