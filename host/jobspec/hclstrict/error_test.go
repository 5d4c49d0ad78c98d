package hclstrict

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
)

func parse(t *testing.T, p *hclparse.Parser, name, src string) *hcl.File {
	t.Helper()
	f, diags := p.ParseHCL([]byte(src), name)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return f
}

func rng(file string, line, col, byteOff, endByte int) *hcl.Range {
	return &hcl.Range{
		Filename: file,
		Start:    hcl.Pos{Line: line, Column: col, Byte: byteOff},
		End:      hcl.Pos{Line: line, Column: col + endByte - byteOff, Byte: endByte},
	}
}

func TestNewErrorNilWithoutErrors(t *testing.T) {
	if err := NewError(nil, nil); err != nil {
		t.Errorf("nil diags: %v", err)
	}
	warn := hcl.Diagnostics{{Severity: hcl.DiagWarning, Summary: "w"}}
	if err := NewError(warn, nil); err != nil {
		t.Errorf("warnings only: %v", err)
	}
}

func TestErrorRendersLocationSnippetAndCarets(t *testing.T) {
	p := hclparse.NewParser()
	parse(t, p, "a.hcl", "x = 1\n\tname = \"héllo\"\n")
	// Subject: the string literal "héllo" with its quotes, on line 2.
	start := strings.Index("x = 1\n\tname = \"héllo\"\n", `"`)
	end := start + len(`"héllo"`)
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Bad name", Detail: "Names are short.",
		Subject: rng("a.hcl", 2, 9, start, end)}
	got := NewError(hcl.Diagnostics{d}, p.Files()).Error()
	want := "a.hcl:2:9: Bad name\n" +
		"  on a.hcl line 2:\n" +
		"   2: \tname = \"héllo\"\n" +
		"      \t       ^^^^^^^\n" +
		"\n" +
		"Names are short."
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestErrorSortsAcrossFilesAndKeepsUnlocatedLast(t *testing.T) {
	p := hclparse.NewParser()
	parse(t, p, "b.hcl", "b = 1\nbb = 2\n")
	parse(t, p, "a.hcl", "a = 1\n")
	diags := hcl.Diagnostics{
		{Severity: hcl.DiagError, Summary: "no location"},
		{Severity: hcl.DiagError, Summary: "b2", Subject: rng("b.hcl", 2, 1, 6, 8)},
		{Severity: hcl.DiagError, Summary: "b1", Subject: rng("b.hcl", 1, 1, 0, 1)},
		{Severity: hcl.DiagWarning, Summary: "dropped warning", Subject: rng("a.hcl", 1, 1, 0, 1)},
		{Severity: hcl.DiagError, Summary: "a1", Subject: rng("a.hcl", 1, 1, 0, 1)},
	}
	de := NewError(diags, p.Files()).(*DiagnosticsError)
	var order []string
	for _, d := range de.Diags {
		order = append(order, d.Summary)
	}
	if strings.Join(order, ",") != "a1,b1,b2,no location" {
		t.Errorf("order = %v", order)
	}
	text := de.Error()
	if strings.Contains(text, "dropped warning") {
		t.Error("warnings must not be part of the error")
	}
	if !strings.HasPrefix(text, "a.hcl:1:1: a1\n") || !strings.HasSuffix(text, "\n\nno location") {
		t.Errorf("text:\n%s", text)
	}
}

// Diagnostics at end of file point past the last byte; rendering must clamp
// rather than panic, and a file the error does not know is still reported.
func TestErrorOutOfRangeSubjects(t *testing.T) {
	p := hclparse.NewParser()
	parse(t, p, "c.hcl", "c = 1")
	diags := hcl.Diagnostics{
		{Severity: hcl.DiagError, Summary: "eof", Subject: rng("c.hcl", 1, 6, 5, 5)},
		{Severity: hcl.DiagError, Summary: "beyond", Subject: rng("c.hcl", 3, 1, 500, 900)},
		{Severity: hcl.DiagError, Summary: "elsewhere", Subject: rng("zzz.hcl", 1, 1, 0, 1)},
	}
	text := NewError(diags, p.Files()).Error()
	for _, want := range []string{"c.hcl:1:6: eof", "c.hcl:3:1: beyond", "zzz.hcl:1:1: elsewhere", "source code not available"} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
}

// A long line is quoted around the subject, so that a file of one huge
// line (generated, or made to hurt) does not flood the terminal, and the
// carets still point at the subject.
func TestErrorQuotesAroundTheSubjectOfALongLine(t *testing.T) {
	line := "a = [" + strings.Repeat(`"x", `, 1000) + `"here", ` + strings.Repeat(`"y", `, 1000) + "]"
	p := hclparse.NewParser()
	parse(t, p, "long.hcl", "b = 1\n"+line+"\n")
	start := len("b = 1\n") + strings.Index(line, `"here"`)
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Bad item", Detail: "No.",
		Subject: rng("long.hcl", 2, strings.Index(line, `"here"`)+1, start, start+len(`"here"`))}
	lines := strings.Split(NewError(hcl.Diagnostics{d}, p.Files()).Error(), "\n")
	if len(lines) != 6 {
		t.Fatalf("got %d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	quoted, caret := lines[2], lines[3]
	if len(quoted) > maxQuotedLine+20 || !strings.HasPrefix(quoted, "   2: ... ") || !strings.HasSuffix(quoted, " ...") {
		t.Errorf("quoted line (%d bytes): %q", len(quoted), quoted)
	}
	if at := strings.Index(caret, "^"); at < 0 || !strings.HasPrefix(quoted[at:], `"here"`) || strings.Count(caret, "^") != len(`"here"`) {
		t.Errorf("carets do not underline the subject:\n%s\n%s", quoted, caret)
	}
	// A line of the range's context that is not the subject's is cut too.
	d.Context = &hcl.Range{Filename: "long.hcl", Start: hcl.Pos{Line: 1, Column: 1, Byte: 0}, End: d.Subject.End}
	d.Subject = rng("long.hcl", 1, 1, 0, 1)
	text := NewError(hcl.Diagnostics{d}, p.Files()).Error()
	for _, l := range strings.Split(text, "\n") {
		if len(l) > maxQuotedLine+20 {
			t.Errorf("a quoted line of %d bytes:\n%s", len(l), text)
		}
	}
}

// What an expression's variables held stays in the text, as hcl's writer
// puts it.
func TestErrorSaysWhatVariablesHeld(t *testing.T) {
	p := hclparse.NewParser()
	f := parse(t, p, "v.hcl", "a = x + 1\n")
	attrs, _ := f.Body.JustAttributes()
	_, diags := attrs["a"].Expr.Value(&hcl.EvalContext{Variables: map[string]cty.Value{"x": cty.StringVal("s")}})
	got := NewError(diags, p.Files()).Error()
	want := "v.hcl:1:5: Invalid operand\n" +
		"  on v.hcl line 1:\n" +
		"   1: a = x + 1\n" +
		"          ^\n" +
		"\n" +
		"with x as \"s\".\n" +
		"\n" +
		"Unsuitable value for left operand: a number is required."
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
