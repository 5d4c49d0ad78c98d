package taskrunner

import (
	"fmt"
	"strings"
)

// CheckPathElem refuses a name that would not stay a single element of the
// path it is joined into: empty, "." or "..", or holding '/' or NUL. The job
// parser and the API validator already refuse such names; checking again
// where a name becomes a path means no input path, present or future
// (a restored store, a hand-edited record), can create or remove anything
// outside the data dir. kind names what the name is, for the error.
func CheckPathElem(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is empty, so it cannot name a directory", kind)
	case name == "." || name == "..":
		return fmt.Errorf("%s %q would name a directory other than its own", kind, name)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("%s %q contains '/' or NUL, so it is not a single path element", kind, name)
	}
	return nil
}
