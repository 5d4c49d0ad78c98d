package jobspec

import (
	"strings"
	"unicode"

	"github.com/hashicorp/hcl/v2"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// maxNameLen matches Nomad's limit on job IDs.
const maxNameLen = 128

// checkName validates a job ID, group or task name. These become directory
// names and registry keys, so besides Nomad's rules (no spaces, no NUL, task
// names without '/') pluginhost also refuses '/' everywhere, "." and "..":
// a name must never escape the directory it names.
func checkName(d *hclstrict.Decoder, kind, name string, rng hcl.Range) {
	bad := ""
	switch {
	case name == "":
		bad = "must not be empty"
	case len(name) > maxNameLen:
		bad = "must be at most 128 bytes long"
	case name == "." || name == "..":
		bad = "must not be \".\" or \"..\""
	case strings.ContainsRune(name, '/'):
		bad = "must not contain '/'"
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		bad = "must not contain spaces or control characters"
	}
	if bad != "" {
		d.Errorf(rng, "Invalid "+kind, "The %s %q %s.", kind, name, bad)
	}
}

// labelRange is where a block's first label is written, falling back to the
// block header.
func labelRange(b *hcl.Block) hcl.Range {
	if len(b.LabelRanges) > 0 {
		return b.LabelRanges[0]
	}
	return b.DefRange
}
