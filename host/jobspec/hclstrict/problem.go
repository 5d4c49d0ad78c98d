package hclstrict

import (
	"fmt"
	"slices"
	"strings"
)

// Problem is one semantic rule a decoded value breaks, named by the Go field
// path of the offending field ("" is the value itself). Validators produce
// Problems without knowing whether the value came from a file; a parser
// places them in the file with Fields.Place.
type Problem struct {
	// Field is the path of the offending field in Go field names, such as
	// "TaskGroups[0].Tasks[1].Name" or `Parameters[""]`; "" is the whole
	// value.
	Field string
	// Summary and Detail are the texts the file parser reports for the
	// same mistake, so a value is refused in the same words however it
	// came.
	Summary string
	Detail  string

	// atKey marks a problem with a key being present at all (rather than
	// with its value), which a file reports at the key's name. Unexported
	// because it only means something to Place.
	atKey bool
}

// Problems collects problems; every check adds to it and carries on, so one
// validation reports everything, as a parser does.
type Problems []Problem

// Add adds a problem about field's value.
func (ps *Problems) Add(field, summary, format string, args ...any) {
	*ps = append(*ps, Problem{Field: field, Summary: summary, Detail: fmt.Sprintf(format, args...)})
}

// AddKey adds a problem about field's key being written at all.
func (ps *Problems) AddKey(field, summary, format string, args ...any) {
	ps.Add(field, summary, format, args...)
	(*ps)[len(*ps)-1].atKey = true
}

// Null adds the problem of a nil where a value is needed; what names it.
func (ps *Problems) Null(field, what string) {
	ps.Add(field, "Missing "+what, "The %s must not be null.", what)
}

// Enum checks that s, the value of the file's key, is one of allowed.
func (ps *Problems) Enum(field, key, s string, allowed []string) bool {
	if !slices.Contains(allowed, s) {
		ps.Add(field, "Invalid "+key, "%s must be one of %q, got %q.", key, allowed, s)
		return false
	}
	return true
}

// ProblemsText renders problems one a line as "field: summary: detail";
// whole stands for the field "" (the value itself), such as "job".
func ProblemsText(ps []Problem, whole string) string {
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		field := p.Field
		if field == "" {
			field = whole
		}
		parts = append(parts, fmt.Sprintf("%s: %s: %s", field, p.Summary, p.Detail))
	}
	return strings.Join(parts, "\n")
}
