package host

import (
	"os"
	"path/filepath"
	"testing"
)

func TestNodeIDIsStable(t *testing.T) {
	dir := t.TempDir()
	first, err := loadNodeID(dir)
	if err != nil || len(first) != 36 {
		t.Fatalf("first start: %q %v", first, err)
	}
	again, err := loadNodeID(dir)
	if err != nil || again != first {
		t.Fatalf("second start: %q %v, want %q", again, err, first)
	}
	if err := os.WriteFile(filepath.Join(dir, NodeIDFileName), []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadNodeID(dir); err == nil {
		t.Fatal("an empty node id file was accepted")
	}
}
