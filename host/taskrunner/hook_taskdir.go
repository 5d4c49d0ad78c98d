package taskrunner

import (
	"context"
	"fmt"
	"os"
)

// taskDirHook builds Nomad's allocation layout: alloc/ (shared), alloc/logs,
// <task>/local (NOMAD_TASK_DIR) and <task>/secrets (0700). It is idempotent:
// a restart or a restored task finds its files where it left them.
type taskDirHook struct{}

func (taskDirHook) Name() string { return "task_dir" }

func (taskDirHook) Prestart(_ context.Context, req *HookRequest) error {
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{
		{req.SharedDir, 0o755}, {req.LogDir, 0o755}, {req.TaskDir, 0o755},
		{req.LocalDir, 0o755}, {req.SecretsDir, 0o700},
	} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			return fmt.Errorf("task dir: %w", err)
		}
		// MkdirAll honours the umask; secrets must be 0700 whatever it is.
		if err := os.Chmod(d.path, d.mode); err != nil {
			return fmt.Errorf("task dir: %w", err)
		}
	}
	return nil
}
