// Package badjobs writes the hostile job files of issue 26, so that the
// parser's tests, the CLI's and the end-to-end tests send the same bytes.
package badjobs

import (
	"fmt"
	"strings"
)

// The sizes of the issue's files.
const (
	// IssueNesting makes NestedParens the issue's 400 KB file, which
	// overflowed the parser's stack.
	IssueNesting = 200_000
	// IssueGroups and IssueCount make ManyGroups the issue's job of 20
	// million allocations (2.5 MB here, 2.8 MB in the issue's spelling).
	IssueGroups = 20_000
	IssueCount  = 1000
)

// NestedParens is a job whose group count is 1 inside n parentheses, all
// on line 3 from column 13.
func NestedParens(n int) []byte {
	return []byte("job \"x\" {\n  group \"g\" {\n    count = " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) +
		"\n    task \"t\" {\n      driver = \"raw_exec\"\n      config { command = \"/bin/true\" }\n    }\n  }\n}\n")
}

// ManyGroups is a job of the given number of groups of one task each, all
// of the given count.
func ManyGroups(groups, count int) []byte {
	var b strings.Builder
	b.WriteString("job \"wide\" {\n")
	for i := range groups {
		fmt.Fprintf(&b, "  group \"g%d\" {\n    count = %d\n    task \"t\" {\n      driver = \"raw_exec\"\n"+
			"      config { command = \"/bin/true\" }\n    }\n  }\n", i, count)
	}
	b.WriteString("}\n")
	return []byte(b.String())
}
