//go:build linux && !amd64 && !arm64

package seccomp

import (
	"errors"
	"fmt"
	"runtime"
)

// The syscall tables are per architecture, and only amd64 and arm64 have
// one; elsewhere Filter and Install fail, so a caller that requires the
// filter refuses to start the task.
const (
	auditArch = 0
	hasX32    = false
)

func rules(Policy) ([]rule, error) {
	return nil, fmt.Errorf("seccomp: no syscall table for %s: %w", runtime.GOARCH, errors.ErrUnsupported)
}
