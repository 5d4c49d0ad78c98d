package beneath

import (
	"errors"
	"fmt"
)

// ErrUnsafe is matched (errors.Is) by every refusal of an entry that is not
// what the caller may act on: a link, a hard-linked file, a device.
var ErrUnsafe = errors.New("refused an entry a task may have planted")

// UnsafeError says which entry was refused and what it is.
type UnsafeError struct {
	// Path is the entry as the agent sees it: the Dir's name joined with
	// the path up to the offending element.
	Path string
	// What it is, phrased to follow the path: "is a symbolic link".
	What string
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("%s %s: refused, since a task could have put it there to redirect the agent", e.Path, e.What)
}

// Is makes errors.Is(err, ErrUnsafe) true.
func (e *UnsafeError) Is(target error) bool { return target == ErrUnsafe }

// ErrBadPath is a path argument that is not a clean relative path of
// single elements: a bug of the caller or input that was not validated,
// never something a task can cause.
var ErrBadPath = errors.New("not a clean relative path")

// Reported is a refusal another process reported as text (a log shipper
// or a mount helper, across a pipe): it matches ErrUnsafe like the
// *UnsafeError it was made from.
type Reported string

func (r Reported) Error() string        { return string(r) }
func (r Reported) Is(target error) bool { return target == ErrUnsafe }
