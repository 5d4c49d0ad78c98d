package hclstrict

import (
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

func attrs(t *testing.T, src string) hcl.Attributes {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCL([]byte(src), "t.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	a, diags := f.Body.JustAttributes()
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return a
}

func TestGetters(t *testing.T) {
	a := attrs(t, `
s   = "x"
n   = 7
big = 1e40
neg = -3
frac = 2.5
b   = true
d   = "90s"
dn  = 90
l   = ["a", 1, true]
nul = null
ln  = ["a", null]
`)
	d := &Decoder{}
	if v, ok := d.String(a["s"], nil); !ok || v != "x" {
		t.Errorf("String = %q %v", v, ok)
	}
	if v, ok := d.String(a["n"], nil); !ok || v != "7" {
		t.Errorf("number as string = %q %v", v, ok)
	}
	if v, ok := d.Int(a["n"], 0, 10); !ok || v != 7 {
		t.Errorf("Int = %d %v", v, ok)
	}
	if v, ok := d.Bool(a["b"]); !ok || !v {
		t.Errorf("Bool = %v %v", v, ok)
	}
	if v, ok := d.Duration(a["d"]); !ok || v != 90*time.Second {
		t.Errorf("Duration = %v %v", v, ok)
	}
	if v, ok := d.StringList(a["l"], nil); !ok || len(v) != 3 || v[1] != "1" || v[2] != "true" {
		t.Errorf("StringList = %q %v", v, ok)
	}
	for _, name := range []string{"nul", "missing"} {
		if _, ok := d.String(a[name], nil); ok {
			t.Errorf("%s: want unset", name)
		}
	}
	if n := d.Count(); n != 0 {
		t.Fatalf("valid input produced %d diagnostics: %v", n, d.Diags())
	}

	bad := []func() bool{
		func() bool { _, ok := d.Int(a["big"], 0, 10); return ok },
		func() bool { _, ok := d.Int(a["neg"], 0, 10); return ok },
		func() bool { _, ok := d.Int(a["frac"], 0, 10); return ok },
		func() bool { _, ok := d.Int(a["s"], 0, 10); return ok },
		func() bool { _, ok := d.Duration(a["dn"]); return ok },
		func() bool { _, ok := d.Duration(a["s"]); return ok },
		func() bool { _, ok := d.Bool(a["s"]); return ok },
		func() bool { _, ok := d.StringList(a["s"], nil); return ok },
		func() bool { _, ok := d.StringList(a["ln"], nil); return ok },
	}
	for i, f := range bad {
		before := d.Count()
		if f() {
			t.Errorf("bad case %d accepted", i)
		}
		if d.Count() != before+1 {
			t.Errorf("bad case %d: %d new diagnostics, want 1", i, d.Count()-before)
		}
		if got := d.Diags()[d.Count()-1]; got.Subject == nil {
			t.Errorf("bad case %d: diagnostic without location", i)
		}
	}
}

func TestScopeAndAtMostOne(t *testing.T) {
	f, diags := hclparse.NewParser().ParseHCL([]byte("a = x\nb = x\nblk {}\nblk {}\n"), "t.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c, diags := f.Body.Content(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "a"}, {Name: "b"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "blk"}},
	})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	d := &Decoder{}
	if _, ok := d.String(c.Attributes["a"], nil); ok || d.Count() != 1 {
		t.Errorf("variable without scope: ok=%v diags=%v", ok, d.Diags())
	}
	calls := 0
	scope := func(hcl.Expression) (*hcl.EvalContext, hcl.Diagnostics) {
		calls++
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "scope says no", Subject: c.Attributes["b"].Expr.Range().Ptr()}}
	}
	if _, ok := d.String(c.Attributes["b"], scope); ok || calls != 1 || d.Diags()[1].Summary != "scope says no" {
		t.Errorf("scope error not reported: %v", d.Diags())
	}
	if b := d.AtMostOne(c.Blocks); b != c.Blocks[0] || d.Count() != 3 {
		t.Errorf("AtMostOne: %v %v", b, d.Diags())
	}
	if got := d.Diags()[2].Subject.Start.Line; got != 4 {
		t.Errorf("duplicate reported at line %d, want 4", got)
	}
}
