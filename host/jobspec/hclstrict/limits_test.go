package hclstrict

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

var testLimits = SourceLimits{Kind: "test file", MaxBytes: 1 << 20}

// deep nests n parentheses around 1 in an attribute at the top level, where
// the file's own nesting is 0.
func deep(n int) string { return "a = " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) + "\n" }

// chain links n operators in one expression.
func chain(n int) string { return "a = 1" + strings.Repeat(" + 1", n) + "\n" }

func TestCheckSource(t *testing.T) {
	for _, c := range []struct {
		name, src string
		// want is "LINE:COL: Summary", or "" for a file that may be parsed.
		want string
	}{
		{"depth at the limit", deep(MaxNestingDepth), ""},
		{"depth over the limit", deep(MaxNestingDepth + 1), "1:69: Nesting too deep"},
		{"blocks count", strings.Repeat("b {\n", MaxNestingDepth+1), "65:3: Nesting too deep"},
		{"interpolations count", "a = " + strings.Repeat(`"${`, MaxNestingDepth+1), "1:198: Nesting too deep"},
		{"directives count", `a = "` + strings.Repeat("%{ if true }", MaxNestingDepth) + `%{ if true }x"`, "1:774: Nesting too deep"},
		{"ended directives do not", `a = "` + strings.Repeat("%{ if true }x%{ endif }", 2*MaxNestingDepth) + `"`, ""},
		{"operators at the limit", chain(MaxExpressionOperators), ""},
		{"operators over the limit", chain(MaxExpressionOperators + 1), "1:263: Expression too complex"},
		{"unary operators", "a = " + strings.Repeat("!", MaxExpressionOperators+1) + "true\n", "1:69: Expression too complex"},
		{"conditionals", "a = " + strings.Repeat("true ? 1 : ", MaxExpressionOperators+1) + "1\n", "1:714: Expression too complex"},
		{"index chain", "a = [1]" + strings.Repeat("[0]", MaxExpressionOperators) + "\n", "1:197: Expression too complex"},
		{"lines end an attribute", strings.Repeat("a = -1\n", 2*MaxExpressionOperators), ""},
		{"commas end an item", "a = [" + strings.Repeat("-1, ", 2*MaxExpressionOperators) + "]\n", ""},
		{"lines do not end a parenthesis", "a = (1\n" + strings.Repeat("+ 1\n", MaxExpressionOperators+1) + ")\n", "66:1: Expression too complex"},
		{"nor a for expression in braces", "a = {for k in [1]: k => 1\n" + strings.Repeat("+ 1\n", MaxExpressionOperators) + "}\n", "65:1: Expression too complex"},
		{"a comment first does not hide the for", "a = {\n# c\nfor k in [1]: k => 1\n" + strings.Repeat("+ 1\n", MaxExpressionOperators) + "}\n", "67:1: Expression too complex"},
		{"identifiers and exponents are not operators", "a = [x-y-z-" + strings.Repeat("w-", 2*MaxExpressionOperators) + "v, 1e-5]\n", ""},
		{"but a minus after a number is", "a = 1" + strings.Repeat("-1", MaxExpressionOperators+1) + "\n", "1:134: Expression too complex"},
		{"strings are text", `a = "` + strings.Repeat("((", 200) + `\"` + `"` + "\n", ""},
		{"escaped interpolations are text", `a = "` + strings.Repeat("$${((", 200) + `%%{[[` + `"` + "\n", ""},
		{"line comments are text", "# " + strings.Repeat("(", 200) + "\n// " + strings.Repeat("[", 200) + "\n", ""},
		{"block comments are text", "/* " + strings.Repeat("{", 200) + " */\n", ""},
		{"an unterminated block comment is not", "/* " + strings.Repeat("(", MaxNestingDepth+1), "1:68: Nesting too deep"},
		{"heredocs are text", "a = <<EOF\n" + strings.Repeat("(", 200) + "\n  EOF\nb = <<-X\n" + strings.Repeat("{", 200) + "\n\tX\n", ""},
		{"heredoc interpolations are not", "a = <<EOF\n" + strings.Repeat("${", MaxNestingDepth+1), "2:130: Nesting too deep"},
		{"the heredoc ends where hcl ends it", "a = <<EOF\n\xffEOF\nb = " + deep(MaxNestingDepth + 1)[4:], "3:69: Nesting too deep"},
		{"heredoc marker beyond ASCII", "a = <<ÉOF\n" + strings.Repeat("(", 200) + "\nÉOF\nb = " + deep(MaxNestingDepth + 1)[4:], "4:69: Nesting too deep"},
		// hcl reads "x\xca(" and "\xca\"" as identifiers.
		{"code beyond ASCII is read as hcl reads it", "a = x\xca(\n" + deep(MaxNestingDepth) + "c = \xca\"" + strings.Repeat("(", MaxNestingDepth+1) + "\n", "3:71: Nesting too deep"},
		{"a closer that closes nothing", "a = 1)\n", "1:6: Mismatched bracket"},
		{"a closer of another bracket", "a = [(]\n", "1:7: Mismatched bracket"},
		{"a brace closing an interpolation's parenthesis", `a = "${(}"` + "\n", "1:9: Mismatched bracket"},
		{"columns count characters", "a = \"é\" + " + strings.Repeat("(", MaxNestingDepth+1), "1:75: Nesting too deep"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckSource([]byte(c.src), "t.hcl", testLimits)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var de *DiagnosticsError
			if !errors.As(err, &de) || len(de.Diags) != 1 {
				t.Fatalf("want one diagnostic %q, got %T %v", c.want, err, err)
			}
			d := de.Diags[0]
			if got := fmt.Sprintf("%d:%d: %s", d.Subject.Start.Line, d.Subject.Start.Column, d.Summary); got != c.want {
				t.Errorf("got %q, want %q\n%v", got, c.want, err)
			}
			if !strings.HasPrefix(err.Error(), "t.hcl:"+strings.SplitN(c.want, " ", 2)[0]) {
				t.Errorf("error text does not start with its location:\n%v", err)
			}
		})
	}
}

// A file the limits admit is one the parser gets through: here the worst
// combinations they allow, parsed and evaluated by hcl itself. A stack
// overflow would end the test binary rather than fail the test.
func TestAdmittedWorstCasesParse(t *testing.T) {
	ops := MaxExpressionOperators - 1 // each level's opening bracket is a link too
	var unary, interp, cond strings.Builder
	for range MaxNestingDepth {
		unary.WriteString(strings.Repeat("-", ops) + "(")
		interp.WriteString(`"${` + strings.Repeat("!", ops))
		cond.WriteString("(" + strings.Repeat("true ? 1 : ", ops))
	}
	for name, src := range map[string]string{
		"unary":  "a = " + unary.String() + "1" + strings.Repeat(")", MaxNestingDepth) + "\n",
		"interp": "a = " + interp.String() + "true" + strings.Repeat(`}"`, MaxNestingDepth) + "\n",
		"cond":   "a = " + cond.String() + "1" + strings.Repeat(")", MaxNestingDepth) + "\n",
		"chain":  "a = " + strings.Repeat("(1"+strings.Repeat(" + 1", ops-1)+" + ", MaxNestingDepth-1) + "1" + strings.Repeat(")", MaxNestingDepth-1) + "\n",
	} {
		if err := CheckSource([]byte(src), "t.hcl", testLimits); err != nil {
			t.Fatalf("%s: the worst admitted case is refused: %v", name, err)
		}
		f, diags := hclsyntax.ParseConfig([]byte(src), "t.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("%s: %v", name, diags)
		}
		attrs, _ := f.Body.JustAttributes()
		if _, diags := attrs["a"].Expr.Value(nil); diags.HasErrors() && name != "interp" {
			t.Errorf("%s: %v", name, diags)
		}
	}
}

// openers runs the native scan without limits and returns the offsets of
// every level it opened, up to where it stopped.
func openers(src []byte) (opens []int, stop int) {
	stop = len(src)
	s := nativeScan{src: src, maxDepth: 1 << 30, maxOps: 1 << 30, onOpen: func(at int) { opens = append(opens, at) }}
	p := s.scanBytes()
	if p == nil && s.lex {
		opens = nil
		p = s.scanTokens()
	}
	if p != nil {
		stop = p.at
	}
	return opens, stop
}

// lexerOpeners are the offsets of hclsyntax's opening tokens, and where its
// scanner gave up: the rest of the file is then one invalid token.
func lexerOpeners(src []byte) (opens []int, cut int) {
	toks, _ := hclsyntax.LexConfig(src, "t.hcl", hcl.InitialPos)
	for _, tok := range toks {
		switch tok.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			opens = append(opens, tok.Range.Start.Byte)
		case hclsyntax.TokenInvalid:
			if tok.Range.End.Byte == len(src) && tok.Range.End.Byte-tok.Range.Start.Byte > 1 {
				return opens, tok.Range.Start.Byte
			}
		}
	}
	return opens, len(src)
}

// checkSameOpeners fails unless the scan opens a level exactly where hcl's
// own scanner opens a bracket, up to where either stopped: reading text as
// code, or code as text, would let a file hide depth from the scan.
func checkSameOpeners(t *testing.T, src []byte) {
	t.Helper()
	mine, stop := openers(src)
	theirs, cut := lexerOpeners(src)
	before := func(at int) bool { return at >= min(stop, cut) }
	mine, theirs = slices.DeleteFunc(mine, before), slices.DeleteFunc(theirs, before)
	if !slices.Equal(mine, theirs) {
		t.Fatalf("scan opens levels at %v, hcl's scanner at %v (scan stopped at %d, hcl's at %d) in %q", mine, theirs, stop, cut, src)
	}
	// The byte scan and the token scan count alike, here against limits
	// low enough for short inputs to reach.
	bs := nativeScan{src: src, maxDepth: 3, maxOps: 3}
	byBytes := bs.scanBytes()
	if bs.lex {
		return
	}
	ts := nativeScan{src: src, maxDepth: 3, maxOps: 3}
	byTokens := ts.scanTokens()
	where := func(p *problem) string {
		if p == nil || p.at >= cut {
			return "none"
		}
		return fmt.Sprintf("%s at %d", p.summary, p.at)
	}
	if a, b := where(byBytes), where(byTokens); a != b {
		t.Fatalf("the byte scan finds %s, the token scan %s in %q", a, b, src)
	}
}

var lexerCases = []string{
	"a = (1 + [2, {b = 3}])\n",
	"a = \"x ${ b } y %{ if c }z%{ endif }\"\n",
	"a = \"\\\"${1}\\\\\" \"$${2}\" \"%%{3}\" \"$$${4}\" \"$\" \"%\"\n",
	"a = \"${ {b = \"${ (1) }\"} }\"\n",
	"a = <<EOF\n(${ 1 }[\n  EOF\nb = (2)\n",
	"a = <<-EOF\n\t${\"x\"}\n\tEOF\n",
	"a = <<EOF\n\xffEOF\n(1)\n",
	"a = <<EOF\n${1}EOF\nEOF\n(2)\n",
	"a = <<EOF\r\n(\r\nEOF\r\n[1]\n",
	"a = <<EOF\nx\xc3EOF\n(\nEOF\n",
	"a = <<EOF\n\u00a0EOF\u00a0\n(1)\n",
	"a = <<EOF\n$\nEOF\n(1)\n",
	"a = <<EOF x\n(1)\n",
	"a = <<1EOF\n(1)\n",
	"# (\n// [\n/* { */ a = (1) /* unterminated ( \n",
	"a = 1 /* multi\nline */ + (2)\n",
	"a = \"new\nline (\" + (1)\n",
	"a = \"\\\n(\"\n",
	"a = {for k, v in x: k => (v)}\n",
	"a = [for x in y: x if (x)]\n",
	"a = \"%{ for x in [1] }${x}%{ endfor }\"\n",
	"a = \"${~ 1 ~}\"\n",
	"a = \"\xff\" \"\xc3\" (1)\n",
	"a = 1e-5 - x-y\n",
	"a = $\"${1}\"\n",
	"a = } (\n",
	"a = \"${ } }\" (\n",
	"\xef\xbb\xbfa = (1)\n",
}

func TestScanOpensWhereHCLDoes(t *testing.T) {
	for _, src := range lexerCases {
		checkSameOpeners(t, []byte(src))
	}
}

// FuzzScanOpensWhereHCLDoes looks for text the scan reads differently
// from hcl's scanner.
func FuzzScanOpensWhereHCLDoes(f *testing.F) {
	for _, src := range lexerCases {
		f.Add([]byte(src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkSameOpeners(t, src)
	})
}

func TestCheckSourceSize(t *testing.T) {
	src := []byte(strings.Repeat("a = 1\n", 100))
	l := SourceLimits{Kind: "test file", MaxBytes: 64}
	err := CheckSource(src, "big.hcl", l)
	want := "big.hcl:11:5: Test file too large\n" +
		"  on big.hcl line 11:\n" +
		"  11: a = 1\n" +
		"          ^\n" +
		"\n" +
		"A test file may be at most 64 bytes; this one goes on past this point. Is this the file you meant?"
	if err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
	if err := CheckSource(src[:64], "big.hcl", l); err != nil {
		t.Errorf("a file at the limit: %v", err)
	}
}

func TestCheckSourceJSON(t *testing.T) {
	l := SourceLimits{Kind: "test file", MaxBytes: 1 << 20, Syntax: SyntaxJSON}
	for _, c := range []struct {
		name, src, want string
	}{
		{"at the limit", strings.Repeat("[", MaxNestingDepth) + strings.Repeat("]", MaxNestingDepth), ""},
		{"over the limit", strings.Repeat(`{"a":`, MaxNestingDepth+1), "1:321: Nesting too deep"},
		{"strings are text", `{"a": "` + strings.Repeat(`[\"`, 200) + `"}`, ""},
		{"a mismatched closer closes nothing", strings.Repeat("[}", MaxNestingDepth+1), "1:129: Nesting too deep"},
		// hcl's JSON scanner steps over a "prepend" character and the
		// quote after it as one character: the string goes on.
		{"a quote taken by a grapheme cluster", "[\"\u0600\"" + strings.Repeat("[", MaxNestingDepth) + "\"]", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckSource([]byte(c.src), "t.json", l)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var de *DiagnosticsError
			if !errors.As(err, &de) {
				t.Fatalf("want %q, got %v", c.want, err)
			}
			d := de.Diags[0]
			if got := fmt.Sprintf("%d:%d: %s", d.Subject.Start.Line, d.Subject.Start.Column, d.Summary); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// BenchmarkCheckSource is the scan's share of parsing the demo job file.
func BenchmarkCheckSource(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "demo.hcl"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckSource(src, "demo.hcl", testLimits); err != nil {
			b.Fatal(err)
		}
	}
}
