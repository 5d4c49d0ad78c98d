package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The agent prefers the standalone shipper next to its binary and falls
// back to its own hidden subcommand when it is missing or not executable.
func TestLogmonCommand(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "pluginhost")
	if got, want := logmonCommand(exe), []string{exe, "logmon"}; !slices.Equal(got, want) {
		t.Errorf("no standalone shipper: %q, want %q", got, want)
	}
	standalone := filepath.Join(dir, LogmonBinary)
	if err := os.WriteFile(standalone, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := logmonCommand(exe), []string{exe, "logmon"}; !slices.Equal(got, want) {
		t.Errorf("non-executable standalone shipper: %q, want %q", got, want)
	}
	if err := os.Chmod(standalone, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := logmonCommand(exe), []string{standalone}; !slices.Equal(got, want) {
		t.Errorf("standalone shipper present: %q, want %q", got, want)
	}
}
