package csi

import (
	"strings"
)

// JoinErrors is errors.Join on one line: the errors' texts joined with
// "; ". errors.Join puts a newline between them, which breaks status
// tables, task events and log lines wherever the text ends up (a probe
// timeout is a gRPC error and the caller's deadline). errors.Is and
// errors.As see every one of them; nil errors are dropped and no errors
// is nil.
func JoinErrors(errs ...error) error {
	var kept []error
	for _, err := range errs {
		if err != nil {
			kept = append(kept, err)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return &lineErrors{errs: kept}
}

type lineErrors struct{ errs []error }

func (e *lineErrors) Error() string {
	parts := make([]string, len(e.errs))
	for i, err := range e.errs {
		// An inner errors.Join still has its newlines.
		parts[i] = strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	return strings.Join(parts, "; ")
}

func (e *lineErrors) Unwrap() []error { return e.errs }
