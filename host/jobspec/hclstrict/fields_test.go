package hclstrict

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
)

func TestFieldsPlace(t *testing.T) {
	a := attrs(t, "name = \"x\"\ncount = \"many\"\nextra = 1\n")
	f := NewFields()
	root := hcl.Range{Filename: "t.hcl", Start: hcl.Pos{Line: 9, Column: 1}}
	f.At("", root)
	f.FieldString("Name", a["name"], nil)
	if _, ok := f.FieldWhole("Count", a["count"], 0, 10); ok {
		t.Fatal("a string read as a whole number")
	}
	f.Attr("Extra", a["extra"], func() bool { return true })
	before := f.Count()

	var ps Problems
	ps.Add("Name", "Bad name", "value")
	ps.AddKey("Extra", "Unexpected extra", "key")
	ps.Add("Count", "Out of range", "already reported, so left out")
	ps.Add("Nested[0].Deep", "Bad deep", "no place of its own")
	f.Place(ps, "t.hcl")

	got := f.Diags()[before:]
	want := []struct {
		summary string
		line    int
		col     int
	}{
		{"Bad name", 1, 8},         // the value
		{"Unexpected extra", 3, 1}, // the key
		{"Bad deep", 9, 1},         // the closest enclosing field: the root
	}
	if len(got) != len(want) {
		t.Fatalf("got %d diagnostics, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		s := got[i].Subject
		if got[i].Summary != w.summary || s.Start.Line != w.line || s.Start.Column != w.col {
			t.Errorf("diagnostic %d = %q at %d:%d, want %q at %d:%d",
				i, got[i].Summary, s.Start.Line, s.Start.Column, w.summary, w.line, w.col)
		}
	}
}

func TestIsFieldPrefix(t *testing.T) {
	for _, c := range []struct {
		prefix, path string
		want         bool
	}{
		{"", "A", true},
		{"A", "A", true},
		{"A", "A.B", true},
		{"A", "A[0]", true},
		{"A", "AB", false},
		{"A.B", "A", false},
	} {
		if got := isFieldPrefix(c.prefix, c.path); got != c.want {
			t.Errorf("isFieldPrefix(%q, %q) = %v, want %v", c.prefix, c.path, got, c.want)
		}
	}
}

func TestProblemsText(t *testing.T) {
	var ps Problems
	ps.Null("", "job")
	ps.Enum("Mode", "mode", "x", []string{"a", "b"})
	want := "job: Missing job: The job must not be null.\n" +
		`Mode: Invalid mode: mode must be one of ["a" "b"], got "x".`
	if got := ProblemsText(ps, "job"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
