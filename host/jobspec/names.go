package jobspec

import (
	"strings"
	"unicode"

	"github.com/hashicorp/hcl/v2"
)

// maxNameLen matches Nomad's limit on job IDs.
const maxNameLen = 128

// nameProblem says what is wrong with a job ID, group, task name or volume
// alias, or returns "". These become directory names and registry keys, so
// besides Nomad's rules (no spaces, no NUL, task names without '/')
// pluginhost also refuses '/' everywhere, "." and "..": a name must never
// escape the directory it names.
func nameProblem(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case len(name) > maxNameLen:
		return "must be at most 128 bytes long"
	case name == "." || name == "..":
		return "must not be \".\" or \"..\""
	case strings.ContainsRune(name, '/'):
		return "must not contain '/'"
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "must not contain spaces or control characters"
	}
	return ""
}

// labelRange is where a block's first label is written, falling back to the
// block header.
func labelRange(b *hcl.Block) hcl.Range {
	if len(b.LabelRanges) > 0 {
		return b.LabelRanges[0]
	}
	return b.DefRange
}
