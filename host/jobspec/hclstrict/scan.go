package hclstrict

import (
	"bytes"
	"fmt"

	"github.com/apparentlymart/go-textseg/v15/textseg"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// bom is the UTF-8 byte order mark, which hcl's scanner drops.
const bom = "\xef\xbb\xbf"

// The scanners below find the first limit a file crosses. They follow
// hclsyntax's scanner (scan_tokens.rl) and hcl's JSON scanner wherever those
// decide what is code and what is text, and are conservative everywhere
// else: a place where they count less than the parser recurses is a bug.

// frameKind is what an open frame of the native scan is.
type frameKind uint8

const (
	// frameTop is the file's body, at the bottom of the stack.
	frameTop frameKind = iota
	// frameBrace is a block body or an object: a newline ends its items.
	frameBrace
	// frameForBrace is a `{for ...}` expression, which newlines do not end.
	frameForBrace
	frameBracket
	frameParen
	// frameInterp is a `${ ... }` or `%{ ... }` sequence in a template.
	frameInterp
	// frameString and frameHeredoc are templates: their text is not code.
	frameString
	frameHeredoc
)

// counted tells whether a frame is a level of nesting. A template is not:
// what nests in one sits in its interpolations and directives, which are.
func (k frameKind) counted() bool { return k != frameTop && k != frameString && k != frameHeredoc }

// pending is what a frame's first token will decide.
type pending uint8

const (
	pendingNone pending = iota
	// pendingFor: a brace whose first token is `for` is a for expression.
	pendingFor
	// pendingDirective: the keyword after `%{` opens or ends a directive.
	pendingDirective
)

// directive is what a `%{ ... }` sequence does to its template.
type directive uint8

const (
	directiveNone directive = iota
	directiveOpen
	directiveEnd
)

type frame struct {
	kind    frameKind
	pending pending
	// action is an interpolation's directive, applied when it closes.
	action directive
	// at is the offset of the frame's opening token.
	at int
	// ops counts operators and opened brackets since the last separator
	// of the frame's items.
	ops int
	// directives counts the `if` and `for` directives open in a template.
	directives int
	// marker is a heredoc's closing marker, as offsets into the source.
	markerStart, markerEnd int
}

type nativeScan struct {
	src              []byte
	stack            []frame
	depth            int
	maxDepth, maxOps int
	// onOpen, if set, hears of every level opened, by offset: the tests
	// compare them with hclsyntax's own tokens.
	onOpen func(at int)
	// lex is set when the byte scan met code it cannot read as hcl does.
	lex bool
}

// scanNative checks HCL native syntax.
func scanNative(src []byte, maxDepth, maxOps int) *problem {
	s := nativeScan{src: src, maxDepth: maxDepth, maxOps: maxOps}
	return s.run()
}

// run scans the bytes, and if they hold code beyond ASCII, hcl's tokens.
//
// hcl's scanner reads identifiers by Unicode tables generated loosely
// enough that a byte beyond ASCII can take the next one into the
// identifier whatever it is ("\xca(" is one identifier, "\xca\"" too), so
// outside strings, heredocs and comments such a byte can turn code into
// text or text into code. Only hcl's own scanner reads that right. Job
// files almost never hold such bytes outside strings and comments, and
// lexing costs as much as the rest of a parse, so the bytes come first.
func (s *nativeScan) run() *problem {
	if p := s.scanBytes(); p != nil || !s.lex {
		return p
	}
	return s.scanTokens()
}

func (s *nativeScan) reset() {
	// Room for a job file's usual 8 levels and their strings.
	s.stack = append(make([]frame, 0, 16), frame{kind: frameTop})
	s.depth = 0
}

func (s *nativeScan) scanBytes() *problem {
	s.reset()
	src := s.src
	i := 0
	if bytes.HasPrefix(src, []byte(bom)) {
		i = len(bom)
	}
	for i < len(src) && !s.lex {
		var p *problem
		switch s.top().kind {
		case frameString:
			i, p = s.quoted(i)
		case frameHeredoc:
			i, p = s.heredoc(i)
		default:
			i, p = s.expr(i)
		}
		if p != nil {
			return p
		}
	}
	return nil
}

// scanTokens applies the byte scan's rules to hcl's own tokens, which
// settle what is code and what is text.
func (s *nativeScan) scanTokens() *problem {
	s.reset()
	toks, _ := hclsyntax.LexConfig(s.src, "", hcl.InitialPos)
	for _, tok := range toks {
		at, n := tok.Range.Start.Byte, tok.Range.End.Byte-tok.Range.Start.Byte
		t := s.top()
		switch tok.Type {
		case hclsyntax.TokenNewline:
			s.newline()
			continue
		case hclsyntax.TokenComment:
			// A line comment takes its newline along.
			if bytes.HasSuffix(tok.Bytes, []byte("\n")) {
				s.newline()
			}
			continue
		case hclsyntax.TokenEOF:
			continue
		}
		decide := t.pending
		t.pending = pendingNone
		var p *problem
		switch tok.Type {
		case hclsyntax.TokenIdent:
			s.word(t, decide, string(tok.Bytes))
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen:
			p = s.open(at, byte(tok.Type))
		case hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			f := frame{kind: frameInterp, at: at}
			if tok.Type == hclsyntax.TokenTemplateControl {
				f.pending = pendingDirective
			}
			p = s.push(f, 2)
		case hclsyntax.TokenCBrace, hclsyntax.TokenTemplateSeqEnd:
			// "~}" is one token; its brace is what closes.
			p = s.close(tok.Range.End.Byte-1, '}')
		case hclsyntax.TokenCBrack, hclsyntax.TokenCParen:
			p = s.close(at, byte(tok.Type))
		case hclsyntax.TokenOQuote:
			p = s.push(frame{kind: frameString, at: at}, n)
		case hclsyntax.TokenOHeredoc:
			p = s.push(frame{kind: frameHeredoc, at: at}, n)
		case hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			if k := t.kind; k == frameString || k == frameHeredoc {
				s.pop()
			}
		case hclsyntax.TokenMinus, hclsyntax.TokenPlus, hclsyntax.TokenStar, hclsyntax.TokenSlash,
			hclsyntax.TokenPercent, hclsyntax.TokenBang, hclsyntax.TokenQuestion,
			hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual, hclsyntax.TokenLessThan, hclsyntax.TokenLessThanEq,
			hclsyntax.TokenGreaterThan, hclsyntax.TokenGreaterThanEq, hclsyntax.TokenAnd, hclsyntax.TokenOr,
			hclsyntax.TokenBitwiseAnd, hclsyntax.TokenBitwiseOr:
			_, p = s.op(at, n)
		case hclsyntax.TokenComma:
			t.ops = 0
		}
		if p != nil {
			return p
		}
	}
	return nil
}

func (s *nativeScan) top() *frame { return &s.stack[len(s.stack)-1] }

// newline ends an item of a body or an object; everything else reads on
// across lines.
func (s *nativeScan) newline() {
	if t := s.top(); t.kind == frameTop || t.kind == frameBrace {
		t.ops = 0
	}
}

// word settles what a frame's first token decides when it is a word.
func (s *nativeScan) word(t *frame, decide pending, word string) {
	switch decide {
	case pendingFor:
		if word == "for" {
			t.kind = frameForBrace
		}
	case pendingDirective:
		switch word {
		case "if", "for":
			t.action = directiveOpen
		case "endif", "endfor":
			t.action = directiveEnd
		}
	}
}

// open opens a brace, bracket or parenthesis at i. An opened bracket is a
// link of its expression as well: index and splat chains (`x[0][0]...`)
// nest in the parser and the evaluator without nesting in the text.
func (s *nativeScan) open(i int, c byte) *problem {
	if _, p := s.op(i, 1); p != nil {
		return p
	}
	f := frame{kind: frameBrace, at: i, pending: pendingFor}
	switch c {
	case '[':
		f = frame{kind: frameBracket, at: i}
	case '(':
		f = frame{kind: frameParen, at: i}
	}
	return s.push(f, 1)
}

// push opens a frame for the n-byte token at f.at.
func (s *nativeScan) push(f frame, n int) *problem {
	if f.kind.counted() {
		s.depth++
		if s.depth > s.maxDepth {
			return &problem{at: f.at, n: n, kind: tooDeep, summary: "Nesting too deep"}
		}
		if s.onOpen != nil {
			s.onOpen(f.at)
		}
	}
	s.stack = append(s.stack, f)
	return nil
}

func (s *nativeScan) pop() frame {
	f := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	if f.kind.counted() {
		s.depth--
	}
	// A template's open directives end with it (unclosed, which the
	// parser reports).
	s.depth -= f.directives
	return f
}

// op counts an n-byte operator at i in the innermost frame's expression.
func (s *nativeScan) op(i, n int) (int, *problem) {
	t := s.top()
	t.ops++
	if t.ops > s.maxOps {
		return 0, &problem{at: i, n: n, kind: tooManyOperators, summary: "Expression too complex"}
	}
	return i + n, nil
}

// expr reads one token (or one stretch of blanks or a comment) in
// expression mode, where hclsyntax's scanner runs its main machine.
func (s *nativeScan) expr(i int) (int, *problem) {
	src := s.src
	t := s.top()
	c := src[i]
	switch c {
	case ' ', '\t', '\r':
		for i++; i < len(src) && (src[i] == ' ' || src[i] == '\t'); i++ {
		}
		return i, nil
	case '\n':
		// A line comment ends before its newline, which the parser reads
		// as one.
		s.newline()
		return i + 1, nil
	case '#':
		return lineEnd(src, i), nil
	case '/':
		if i+1 < len(src) && src[i+1] == '/' {
			return lineEnd(src, i), nil
		}
		if i+1 < len(src) && src[i+1] == '*' {
			// An unterminated block comment is no comment to hcl's
			// scanner, which reads on after the '/' as code.
			if e := bytes.Index(src[i+2:], []byte("*/")); e >= 0 {
				return i + 2 + e + 2, nil
			}
		}
	}

	// A token: it settles what the frame's first token decides.
	decide := t.pending
	t.pending = pendingNone
	switch {
	case isIdentStart(c):
		j := identEnd(src, i)
		if decide != pendingNone {
			s.word(t, decide, string(src[i:j]))
		}
		return j, nil
	case c >= '0' && c <= '9':
		return numberEnd(src, i), nil
	case c >= 0x80:
		s.lex = true
		return i, nil
	}

	next := byte(0)
	if i+1 < len(src) {
		next = src[i+1]
	}
	switch c {
	case '{', '[', '(':
		return i + 1, s.open(i, c)
	case '}', ']', ')':
		return i + 1, s.close(i, c)
	case '"':
		return i + 1, s.push(frame{kind: frameString, at: i}, 1)
	case '<':
		if next == '<' {
			j, k, ok, ascii := heredocIntro(src, i)
			if !ascii {
				s.lex = true
				return i, nil
			}
			if ok {
				if p := s.push(frame{kind: frameHeredoc, at: i, markerStart: j, markerEnd: k}, 2); p != nil {
					return 0, p
				}
				body := k + 1
				if src[k] == '\r' {
					body++
				}
				return s.heredocEnd(body), nil
			}
		}
		if next == '=' {
			return s.op(i, 2)
		}
		return s.op(i, 1)
	case '=':
		switch next {
		case '=':
			return s.op(i, 2)
		case '>':
			return i + 2, nil
		}
		return i + 1, nil
	case '!', '>':
		if next == '=' {
			return s.op(i, 2)
		}
		return s.op(i, 1)
	case '&', '|':
		if next == c {
			return s.op(i, 2)
		}
		return s.op(i, 1)
	case '-', '+', '*', '/', '%', '?':
		return s.op(i, 1)
	case ',':
		t.ops = 0
	}
	return i + 1, nil
}

// close handles a closing bracket in expression mode. One that does not
// close the innermost open bracket is refused rather than guessed at: hcl's
// scanner and its parser's error recovery each pair such brackets their own
// way, and a scan that paired them differently could count a level as
// closed that the parser still has open.
func (s *nativeScan) close(i int, c byte) *problem {
	t := s.top()
	var opens byte
	switch t.kind {
	case frameBrace, frameForBrace:
		opens = '{'
	case frameBracket:
		opens = '['
	case frameParen:
		opens = '('
	case frameInterp:
		opens = '{'
	}
	if opens != opener(c) {
		p := &problem{at: i, n: 1, summary: "Mismatched bracket"}
		if opens == 0 {
			p.detail = fmt.Sprintf("This '%c' closes nothing: no bracket is open here.", c)
		} else {
			r := rangeAt(s.src, "", t.at, 1)
			what := string(opens)
			if t.kind == frameInterp {
				what = string(s.src[t.at:t.at+2]) + " ... }"
			}
			p.detail = fmt.Sprintf("This '%c' does not close the '%s' at line %d, column %d, the innermost bracket still open.",
				c, what, r.Start.Line, r.Start.Column)
		}
		return p
	}
	f := s.pop()
	if f.kind != frameInterp {
		return nil
	}
	tmpl := s.top()
	switch f.action {
	case directiveOpen:
		tmpl.directives++
		s.depth++
		if s.depth > s.maxDepth {
			return &problem{at: f.at, n: 2, kind: tooDeep, summary: "Nesting too deep"}
		}
	case directiveEnd:
		if tmpl.directives > 0 {
			tmpl.directives--
			s.depth--
		}
	}
	return nil
}

// quoted reads a quoted template up to its end or its next interpolation.
func (s *nativeScan) quoted(i int) (int, *problem) {
	src := s.src
	for i < len(src) {
		switch c := src[i]; c {
		case '"':
			s.pop()
			return i + 1, nil
		case '\\':
			// An escape takes the next character, but never a newline.
			if i+1 < len(src) && src[i+1] != '\n' && src[i+1] != '\r' {
				i += 2
			} else {
				i++
			}
		case '$', '%':
			j, p, opened := s.templateSeq(i)
			if opened || p != nil {
				return j, p
			}
			i = j
		default:
			i++
		}
	}
	return i, nil
}

// heredoc reads a heredoc's text up to its end or its next interpolation.
func (s *nativeScan) heredoc(i int) (int, *problem) {
	src := s.src
	for i < len(src) {
		switch src[i] {
		case '\n':
			j := s.heredocEnd(i + 1)
			if s.top().kind != frameHeredoc {
				return j, nil
			}
			i = j
		case '$', '%':
			j, p, opened := s.templateSeq(i)
			if opened || p != nil {
				return j, p
			}
			i = j
		default:
			i++
		}
	}
	return i, nil
}

// templateSeq reads a '$' or '%' in a template: the start of an
// interpolation or directive, the escape "$${" or "%%{", or a literal.
func (s *nativeScan) templateSeq(i int) (next int, p *problem, opened bool) {
	src := s.src
	c := src[i]
	switch {
	case i+1 < len(src) && src[i+1] == '{':
		f := frame{kind: frameInterp, at: i}
		if c == '%' {
			f.pending = pendingDirective
		}
		if p := s.push(f, 2); p != nil {
			return 0, p, true
		}
		j := i + 2
		if j < len(src) && src[j] == '~' {
			j++
		}
		return j, nil, true
	case i+2 < len(src) && src[i+1] == c && src[i+2] == '{':
		return i + 3, nil, false
	}
	return i + 1, nil, false
}

// heredocEnd is called at the start of each line of the heredoc on top of
// the stack. If the line is its marker, the heredoc ends there; the
// newline after the marker is the enclosing expression's, as in hcl.
//
// hcl compares the line, trimmed of white space, from where its scanner's
// literal text starts: bytes it cannot read as UTF-8 at the start of a line
// are a token of their own, so "\xffEOF" ends a heredoc "EOF" too.
func (s *nativeScan) heredocEnd(i int) int {
	src := s.src
	t := s.top()
	j := i
	for j < len(src) && brokenUTF8(src, j) {
		j++
	}
	e := bytes.IndexByte(src[j:], '\n')
	if e < 0 {
		// A marker needs its newline.
		return i
	}
	if bytes.Equal(bytes.TrimSpace(src[j:j+e]), src[t.markerStart:t.markerEnd]) {
		s.pop()
		return j + e
	}
	return i
}

// heredocIntro reads "<<" or "<<-" at i followed by a marker and a newline.
// It returns the marker's offsets and whether this is a heredoc at all;
// with bytes beyond ASCII in the marker only hcl's scanner can tell.
func heredocIntro(src []byte, i int) (start, end int, ok, ascii bool) {
	j := i + 2
	if j < len(src) && src[j] == '-' {
		j++
	}
	k := j
	for k < len(src) && isIdentByte(src[k]) {
		k++
	}
	if k < len(src) && src[k] >= 0x80 {
		return 0, 0, false, false
	}
	newline := k < len(src) && (src[k] == '\n' || src[k] == '\r' && k+1 < len(src) && src[k+1] == '\n')
	if k == j || !newline || !isIdentStart(src[j]) {
		return 0, 0, false, true
	}
	return j, k, true, true
}

// opener is the opening bracket of a closing one.
func opener(c byte) byte {
	switch c {
	case '}':
		return '{'
	case ']':
		return '['
	case ')':
		return '('
	}
	return 0
}

func isIdentStart(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

func isIdentByte(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' || c == '-' }

// identEnd ends an identifier: ASCII letters, digits, '_' and '-'. hcl's
// identifiers take more (any Unicode identifier character); stopping short
// only makes a '-' after such a character count as an operator.
func identEnd(src []byte, i int) int {
	for i < len(src) && isIdentByte(src[i]) {
		i++
	}
	return i
}

// numberEnd ends a number literal as hcl's scanner does, so that the sign
// of an exponent ("1e-5") is not counted as an operator.
func numberEnd(src []byte, i int) int {
	digit := func(j int) bool { return j < len(src) && src[j] >= '0' && src[j] <= '9' }
	i++
	for i < len(src) {
		switch {
		case digit(i):
			i++
		case src[i] == '.' && digit(i+1):
			i += 2
		case (src[i] == 'e' || src[i] == 'E') && digit(i+1):
			i += 2
		case (src[i] == 'e' || src[i] == 'E') && i+1 < len(src) && (src[i+1] == '+' || src[i+1] == '-') && digit(i+2):
			i += 3
		default:
			return i
		}
	}
	return i
}

func lineEnd(src []byte, i int) int {
	if e := bytes.IndexByte(src[i:], '\n'); e >= 0 {
		return i + e
	}
	return len(src)
}

// brokenUTF8 tells whether hcl's scanner reads the byte at i as a broken
// UTF-8 byte: not ASCII, and not the lead of a sequence of the right
// number of continuation bytes (its AnyUTF8, which is laxer than Go's).
func brokenUTF8(src []byte, i int) bool {
	c := src[i]
	n := 0
	switch {
	case c < 0x80:
		return false
	case c >= 0xC0 && c <= 0xDF:
		n = 1
	case c >= 0xE0 && c <= 0xEF:
		n = 2
	case c >= 0xF0 && c <= 0xF7:
		n = 3
	default:
		return true
	}
	for k := 1; k <= n; k++ {
		if i+k >= len(src) || src[i+k] < 0x80 || src[i+k] > 0xBF {
			return true
		}
	}
	return false
}

// scanJSON checks HCL's JSON syntax, where only arrays and objects nest.
// A closer that does not match the innermost opener closes nothing here,
// so whatever the parser makes of it, it is not counted as less deep.
func scanJSON(src []byte, maxDepth int) *problem {
	var buf [MaxNestingDepth]byte
	open := buf[:0]
	for i := 0; i < len(src); {
		switch c := src[i]; c {
		case '"':
			i = jsonStringEnd(src, i)
			continue
		case '{', '[':
			if len(open) == maxDepth {
				return &problem{at: i, n: 1, kind: tooDeep, summary: "Nesting too deep"}
			}
			open = append(open, c)
		case '}', ']':
			if n := len(open); n > 0 && open[n-1] == opener(c) {
				open = open[:n-1]
			}
		}
		i++
	}
	return nil
}

// jsonStringEnd ends a string as hcl's JSON scanner does: at an unescaped
// quote or a control character, stepping over text one grapheme cluster at
// a time, which can take a quote into a cluster after a Unicode "prepend"
// character.
func jsonStringEnd(src []byte, i int) int {
	i++
	escaping := false
	for i < len(src) {
		switch c := src[i]; {
		case c == '\\':
			escaping = !escaping
			i++
		case c == '"':
			i++
			if !escaping {
				return i
			}
			escaping = false
		case c < 32:
			return i
		case c < 0x80:
			i++
			escaping = false
		default:
			adv, _, _ := textseg.ScanGraphemeClusters(src[i:], true)
			i += max(adv, 1)
			escaping = false
		}
	}
	return i
}
