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
// in the layout of hcl's own diagnostic writer, which users of other HCL
// tools already know, plus a first line that editors and terminals
// recognise as a jump target and a caret line under the range (hcl's
// writer only highlights with terminal colours).
func (e *DiagnosticsError) Error() string {
	parts := make([]string, 0, len(e.Diags))
	for _, d := range e.Diags {
		var one strings.Builder
		e.writeOne(&one, d)
		parts = append(parts, strings.TrimRight(one.String(), "\n"))
	}
	return strings.Join(parts, "\n\n")
}

// writeOne quotes the source itself rather than through hcl's writer,
// which finds a line by scanning the file from its start, a grapheme
// cluster at a time: half a second for a diagnostic at the end of a 1 MiB
// file, paid again for every diagnostic.
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
	f := e.Files[s.Filename]
	if f == nil || f.Bytes == nil {
		fmt.Fprintf(out, "  on %s line %d:\n  (source code not available)\n\n", s.Filename, s.Start.Line)
	} else {
		in := ""
		if cs, ok := f.Nav.(interface{ ContextString(offset int) string }); ok {
			if c := cs.ContextString(s.Start.Byte); c != "" {
				in = ", in " + c
			}
		}
		fmt.Fprintf(out, "  on %s line %d%s:\n", s.Filename, s.Start.Line, in)
		quote(out, f.Bytes, d)
		out.WriteByte('\n')
	}
	if d.Expression != nil && d.EvalContext != nil {
		out.WriteString(valuesText(d))
	}
	if d.Detail != "" {
		fmt.Fprintf(out, "%s\n", d.Detail)
	}
}

// valuesText is what hcl's writer says about the values of the variables
// an expression refers to ("with NAME as ..."), without its quote of the
// source, which it skips for a file it does not have.
func valuesText(d *hcl.Diagnostic) string {
	bare := *d
	bare.Detail = ""
	var body bytes.Buffer
	if err := hcl.NewDiagnosticTextWriter(&body, nil, 0, false).WriteDiagnostic(&bare); err != nil {
		return ""
	}
	// "Error: summary", "", "  on FILE line N:", "  (source code not
	// available)", "", then the values.
	lines := strings.SplitAfterN(body.String(), "\n", 6)
	if len(lines) < 6 {
		return ""
	}
	return lines[5]
}

// maxQuotedLine bounds how much of a source line an error quotes: a file
// of one long line (generated, minified, or made to hurt) would otherwise
// be quoted whole, 400 KB of it for the nested parentheses of issue 26.
const maxQuotedLine = 200

// quote writes the lines the subject and its context cover, as hcl's writer
// does, long ones cut down, with a caret line under the subject's start.
// Byte offsets come from the parser but are checked anyway: diagnostics at
// end of file point one past the last byte.
func quote(out *strings.Builder, src []byte, d *hcl.Diagnostic) {
	s := d.Subject
	snip := *s
	if d.Context != nil && d.Context.Filename == s.Filename {
		snip = hcl.RangeOver(snip, *d.Context)
	}
	if snip.Start.Byte >= len(src) {
		return
	}
	start := max(snip.Start.Byte, 0)
	end := min(max(snip.End.Byte, start+1), len(src))
	subject := min(max(s.Start.Byte, 0), len(src))
	line := snip.Start.Line
	// A range that takes in a newline takes in the next line too, in
	// hcl's writer.
	for from := bytes.LastIndexByte(src[:start], '\n') + 1; from <= end && from < len(src); line++ {
		to := len(src)
		if i := bytes.IndexByte(src[from:], '\n'); i >= 0 {
			to = from + i
		}
		if from <= subject && subject <= to {
			quoted, caret := subjectLine(src, s, from, to)
			fmt.Fprintf(out, "%s\n%s\n", quoted, caret)
		} else {
			fmt.Fprintf(out, "%4d: %s\n", line, headOf(src[from:to]))
		}
		from = to + 1
	}
}

// headOf is a line of the context, cut down to its start if long.
func headOf(line []byte) []byte {
	line = bytes.TrimRight(line, "\r")
	if len(line) <= maxQuotedLine {
		return line
	}
	cut := maxQuotedLine
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return append(line[:cut:cut], " ..."...)
}

// subjectLine quotes the subject's line [lineStart, lineEnd), or for a
// long line the part around the subject, and builds the "^^^" line under
// the subject.
func subjectLine(src []byte, s *hcl.Range, lineStart, lineEnd int) (quoted, caret string) {
	start := min(max(s.Start.Byte, lineStart), lineEnd)
	end := min(max(s.End.Byte, start), lineEnd)
	from, to := lineStart, lineEnd
	if to-from > maxQuotedLine {
		// The line's start while the subject is in the first half of the
		// room, which shows the key; else a quarter of the room before
		// the subject and the rest after.
		if start-lineStart > maxQuotedLine/2 {
			from = max(lineStart, min(start-maxQuotedLine/4, lineEnd-maxQuotedLine))
		}
		to = min(lineEnd, from+maxQuotedLine)
		for from > lineStart && !utf8.RuneStart(src[from]) {
			from--
		}
		for to < lineEnd && !utf8.RuneStart(src[to]) {
			to++
		}
		end = min(end, to)
	}
	prefix := fmt.Sprintf("%4d: ", s.Start.Line)
	var q strings.Builder
	q.WriteString(prefix)
	if from > lineStart {
		q.WriteString("... ")
	}
	q.Write(bytes.TrimRight(src[from:to], "\r"))
	if to < lineEnd {
		q.WriteString(" ...")
	}

	var b strings.Builder
	b.WriteString(strings.Repeat(" ", len(prefix)))
	if from > lineStart {
		b.WriteString("    ")
	}
	for _, r := range string(src[from:start]) {
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	n := max(utf8.RuneCount(bytes.TrimRight(src[start:end], "\r")), 1)
	b.WriteString(strings.Repeat("^", n))
	return q.String(), b.String()
}
