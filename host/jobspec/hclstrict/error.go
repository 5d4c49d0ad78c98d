package hclstrict

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// DiagnosticsError is a failed parse or validation of one or more HCL files.
// It keeps the parser's files so that Error can quote the offending source
// lines: a message that names a key without showing where it is makes the
// user grep their own file.
type DiagnosticsError struct {
	// Diags holds every problem found, sorted by file and position. Only
	// error-severity diagnostics are ever stored.
	Diags hcl.Diagnostics
	// Files maps file names (as given to the parser) to their parsed
	// contents, for rendering source snippets.
	Files map[string]*hcl.File
}

// NewError returns nil when diags holds no errors, and otherwise a
// *DiagnosticsError holding the error diagnostics in source order. It is the
// single place where parse results turn into a Go error, so callers can write
// `return nil, hclstrict.NewError(diags, files)` after a nil check.
func NewError(diags hcl.Diagnostics, files map[string]*hcl.File) error {
	var errs hcl.Diagnostics
	for _, d := range diags {
		if d != nil && d.Severity == hcl.DiagError {
			errs = append(errs, d)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i].Subject, errs[j].Subject
		switch {
		case a == nil || b == nil:
			// Location-less diagnostics go last; they are rare and the
			// located ones are the actionable ones.
			return a != nil && b == nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		default:
			return a.Start.Byte < b.Start.Byte
		}
	})
	return &DiagnosticsError{Diags: errs, Files: files}
}

// Error renders every diagnostic as
//
//	file:line:col: summary
//	  on file line N, in block "label":
//	     N: the source line
//	        ^^^^^
//	detail
//
// using hcl's own text writer for the body so that the output matches what
// users of other HCL tools already know, plus a first line that editors and
// terminals recognise as a jump target and a caret line under the range
// (hcl's writer only highlights with terminal colours).
func (e *DiagnosticsError) Error() string {
	parts := make([]string, 0, len(e.Diags))
	for _, d := range e.Diags {
		var one strings.Builder
		e.writeOne(&one, d)
		parts = append(parts, strings.TrimRight(one.String(), "\n"))
	}
	return strings.Join(parts, "\n\n")
}

func (e *DiagnosticsError) writeOne(out *strings.Builder, d *hcl.Diagnostic) {
	if d.Subject == nil {
		fmt.Fprintf(out, "%s\n", d.Summary)
		if d.Detail != "" {
			fmt.Fprintf(out, "%s\n", d.Detail)
		}
		return
	}
	s := d.Subject
	fmt.Fprintf(out, "%s:%d:%d: %s\n", s.Filename, s.Start.Line, s.Start.Column, d.Summary)

	var body bytes.Buffer
	w := hcl.NewDiagnosticTextWriter(&body, e.Files, 0, false)
	if err := w.WriteDiagnostic(d); err != nil {
		// Writing to a bytes.Buffer cannot fail; keep the summary anyway.
		return
	}
	lines := strings.Split(body.String(), "\n")
	// The writer opens with "Error: <summary>" and a blank line, which the
	// header above already says.
	if len(lines) >= 2 && strings.HasPrefix(lines[0], "Error: ") {
		lines = lines[2:]
	}
	caret, ok := e.caretLine(s)
	snippetPrefix := fmt.Sprintf("%4d: ", s.Start.Line)
	inserted := false
	for _, line := range lines {
		out.WriteString(line)
		out.WriteByte('\n')
		if ok && !inserted && strings.HasPrefix(line, snippetPrefix) {
			out.WriteString(caret)
			out.WriteByte('\n')
			inserted = true
		}
	}
}

// caretLine builds the "^^^" line under the subject's first line. Byte
// offsets come from the parser but are checked anyway: diagnostics at end of
// file point one past the last byte.
func (e *DiagnosticsError) caretLine(s *hcl.Range) (string, bool) {
	f := e.Files[s.Filename]
	if f == nil || f.Bytes == nil {
		return "", false
	}
	src := f.Bytes
	start := min(max(s.Start.Byte, 0), len(src))
	end := min(max(s.End.Byte, start), len(src))
	lineStart := bytes.LastIndexByte(src[:start], '\n') + 1
	lineEnd := len(src)
	if i := bytes.IndexByte(src[start:], '\n'); i >= 0 {
		lineEnd = start + i
	}
	end = min(end, lineEnd)

	var b strings.Builder
	b.WriteString(strings.Repeat(" ", len(fmt.Sprintf("%4d: ", s.Start.Line))))
	for _, r := range string(src[lineStart:start]) {
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	n := max(utf8.RuneCount(bytes.TrimRight(src[start:end], "\r")), 1)
	b.WriteString(strings.Repeat("^", n))
	return b.String(), true
}
