package hclstrict

import (
	"bytes"
	"fmt"

	"github.com/apparentlymart/go-textseg/v15/textseg"
	"github.com/hashicorp/hcl/v2"
)

// hcl's parsers recurse once per level of nesting, and its evaluator once
// per link of an operator chain, with no bound of their own: a 400 KB job
// file of nested parentheses overflowed the agent's 1 GB goroutine stack
// and ended the process (Go cannot recover from that). Every file kind is
// therefore scanned against these bounds before a parser sees it.
//
// Both are far from anything a person writes (the repository's HCL files
// nest at most 6 deep and chain at most 1 link) and far from what
// overflows: the worst file both admit has about 4,200 levels and links
// (64 levels of 65 each), where the shallowest overflow measured takes
// 48,000 template interpolations nested in one another (68,000
// parentheses, 230,000 unary minus signs, 430,000 additions in a row).
const (
	// MaxNestingDepth bounds how deep blocks, braces, brackets,
	// parentheses, template interpolations and template directives may
	// nest in one another.
	MaxNestingDepth = 64

	// MaxExpressionOperators bounds how many operators (unary, binary and
	// conditional), index brackets and splats one expression may chain at
	// one level of nesting. Items of a list or object, and attributes of a
	// body, are separate expressions.
	MaxExpressionOperators = 64
)

// Syntax tells CheckSource how to read a file.
type Syntax int

const (
	// SyntaxNative is HCL's native syntax.
	SyntaxNative Syntax = iota
	// SyntaxJSON is HCL's JSON syntax.
	SyntaxJSON
)

// SourceLimits is what CheckSource enforces on one kind of file.
type SourceLimits struct {
	// Kind names the file kind in messages: "job file".
	Kind string
	// MaxBytes bounds the file's size.
	MaxBytes int
	Syntax   Syntax
}

// CheckSource refuses a file that crosses a limit before any parser reads
// it, with a located *DiagnosticsError naming the limit and where the file
// crosses it; nil means the file may be parsed. Its cost is one pass over
// the bytes (hcl's own scanner's pass where code holds bytes beyond
// ASCII), so a refusal is cheap whatever the file holds.
//
// The scan reads text (strings, heredocs, comments) exactly where hcl's
// scanners do, since text it skipped that the parser reads as code could
// hide any depth, and refuses brackets that do not pair, whose pairing
// the parser's error recovery guesses at. Everywhere else it counts more
// than the parser recurses rather than less.
func CheckSource(src []byte, filename string, l SourceLimits) error {
	var p *problem
	switch {
	case len(src) > l.MaxBytes:
		p = &problem{at: l.MaxBytes, n: 1, summary: capitalize(l.Kind) + " too large",
			detail: fmt.Sprintf("A %s may be at most %s; this one goes on past this point. Is this the file you meant?",
				l.Kind, sizeText(l.MaxBytes))}
	case l.Syntax == SyntaxJSON:
		p = scanJSON(src, MaxNestingDepth)
	default:
		p = scanNative(src, MaxNestingDepth, MaxExpressionOperators)
	}
	if p == nil {
		return nil
	}
	if p.detail == "" {
		p.detail = p.explain(l.Kind)
	}
	rng := rangeAt(src, filename, p.at, p.n)
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: p.summary, Detail: p.detail, Subject: &rng}
	// No parser ran, so the error's source comes from here; without a
	// parsed body the snippet has no "in job ..." context, which a file
	// this broken would not have anyway.
	return NewError(hcl.Diagnostics{d}, map[string]*hcl.File{filename: {Bytes: src}})
}

// problem is the first limit a scan finds crossed: n bytes at offset at.
type problem struct {
	at, n   int
	summary string
	detail  string
	kind    problemKind
}

type problemKind int

const (
	tooDeep problemKind = iota + 1
	tooManyOperators
)

func (p *problem) explain(kind string) string {
	switch p.kind {
	case tooDeep:
		return fmt.Sprintf("Blocks, braces, brackets, parentheses and template interpolations and directives may nest "+
			"at most %d deep in a %s; here they nest deeper. Files this deep are refused before they are parsed, "+
			"because the parser recurses once per level.", MaxNestingDepth, kind)
	case tooManyOperators:
		return fmt.Sprintf("One expression may chain at most %d operators, conditionals, index brackets and splats "+
			"in a %s; this one has more from here on. Such expressions are refused before they are parsed, "+
			"because the parser and the evaluator recurse once per link.", MaxExpressionOperators, kind)
	}
	return ""
}

func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB (%d bytes)", n>>10, n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// rangeAt is the range of n bytes at offset at, with line and column
// counted as hclsyntax counts them: columns are grapheme clusters, and a
// byte order mark, which the scanner strips, takes none.
func rangeAt(src []byte, filename string, at, n int) hcl.Range {
	at = min(max(at, 0), len(src))
	end := min(at+n, len(src))
	lineStart := bytes.LastIndexByte(src[:at], '\n') + 1
	line := 1 + bytes.Count(src[:lineStart], []byte{'\n'})
	from := lineStart
	if lineStart == 0 && bytes.HasPrefix(src[:at], []byte(bom)) {
		from = len(bom)
	}
	col := 1 + graphemes(src[from:at])
	return hcl.Range{
		Filename: filename,
		Start:    hcl.Pos{Line: line, Column: col, Byte: at},
		End:      hcl.Pos{Line: line, Column: col + graphemes(src[at:end]), Byte: end},
	}
}

func graphemes(b []byte) int {
	n := 0
	for len(b) > 0 {
		// An ASCII character before another is a cluster of its own
		// (but for CR LF), and nearly every file is ASCII: a refused
		// file of one 1 MiB line is located in 2 ms this way, not 50.
		if len(b) > 1 && b[0] < 0x80 && b[1] < 0x80 && (b[0] != '\r' || b[1] != '\n') {
			b = b[1:]
			n++
			continue
		}
		adv, _, _ := textseg.ScanGraphemeClusters(b, true)
		if adv <= 0 {
			adv = 1
		}
		b = b[adv:]
		n++
	}
	return n
}
