package leftovers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// CheckStateFile refuses to start over a state file that is missing or
// empty while the data dir holds allocation directories. bbolt would take
// such a file as new and the agent would start empty, leaving the tasks of
// those allocations running unmanaged, with nobody to stop or restart them.
// A truly new data dir (no allocations) starts as before.
func CheckStateFile(dataDir, stateFile string) error {
	path := filepath.Join(dataDir, stateFile)
	st, err := os.Stat(path)
	switch {
	case err == nil && st.Size() > 0:
		return nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("state file %s: %w", path, err)
	}
	allocDir := filepath.Join(dataDir, "alloc")
	entries, err := os.ReadDir(allocDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("data dir %s: %w", dataDir, err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	what := "is empty (0 bytes)"
	if st == nil {
		what = "is missing"
	}
	return fmt.Errorf("state file %s %s, but %s holds %d allocation directories: the agent's record of them is lost "+
		"and their tasks may still be running. Restore %s from a backup; or, to start afresh, stop those tasks "+
		"(their environment carries NOMAD_ALLOC_DIR under %s) and move %s away. Nothing was changed",
		path, what, allocDir, n, stateFile, allocDir, allocDir)
}
