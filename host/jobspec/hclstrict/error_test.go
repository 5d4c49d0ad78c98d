package hclstrict

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
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
