package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// NodeIDFileName holds ${node.unique.id} under the data dir.
const NodeIDFileName = "node-id"

// loadNodeID returns the node's ID, creating it on first start. Like Nomad's
// node ID it lives as long as the data dir, so jobs may use it as a stable
// identity across agent restarts.
func loadNodeID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, NodeIDFileName)
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if id == "" {
			return "", fmt.Errorf("node id file %s is empty; remove it to get a new ID", path)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("reading node id: %w", err)
	}
	id := taskrunner.NewUUID()
	// Written to a temporary name and renamed, so a crash never leaves a
	// half-written ID behind.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("writing node id: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("writing node id: %w", err)
	}
	return id, nil
}
