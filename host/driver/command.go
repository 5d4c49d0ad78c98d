package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ResolveCommand finds the program to run. A name with a slash is used as
// is (relative to workDir if relative). A bare name is looked up in the
// task's PATH (from env) and then in the agent's own PATH, so that a job can
// say `command = "mockcsi"` for a binary installed next to the agent.
func ResolveCommand(command string, env []string, workDir string) (string, error) {
	if command == "" {
		return "", fmt.Errorf("empty command")
	}
	if strings.Contains(command, "/") {
		p := command
		if !filepath.IsAbs(p) && workDir != "" {
			p = filepath.Join(workDir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("command %q: %w", command, err)
		}
		return p, nil
	}
	taskPath := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			taskPath = v
		}
	}
	for _, path := range []string{taskPath, os.Getenv("PATH")} {
		for _, dir := range filepath.SplitList(path) {
			if dir == "" {
				continue
			}
			p := filepath.Join(dir, command)
			if executable(p) == nil {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("command %q not found in the task's PATH %q nor the agent's PATH", command, taskPath)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", p)
	}
	if fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", p)
	}
	return nil
}

// VerifyChecksum checks path against "sha256:<hex>"; "" accepts anything.
func VerifyChecksum(path, checksum string) error {
	if checksum == "" {
		return nil
	}
	algo, want, ok := strings.Cut(checksum, ":")
	if !ok || algo != "sha256" {
		return fmt.Errorf("checksum %q: want \"sha256:<hex>\"", checksum)
	}
	wantB, err := hex.DecodeString(want)
	if err != nil || len(wantB) != sha256.Size {
		return fmt.Errorf("checksum %q: not 64 hex digits", checksum)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("checksum of %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("checksum of %s: %w", path, err)
	}
	if got := h.Sum(nil); string(got) != string(wantB) {
		return fmt.Errorf("%s has sha256:%x, job wants %s: %w", path, got, checksum, ErrChecksumMismatch)
	}
	return nil
}
