// Package text makes strings that came from outside (a plugin's answers, a
// task's output, a job file) safe to show on an operator's terminal:
// control characters, invalid UTF-8 and other unprintable runes are
// written as Go's %q would write them (\x1b, \a, \u202e), so an escape
// sequence in a plugin's name cannot write to the clipboard (OSC 52),
// disguise a link (OSC 8), clear the screen or move the cursor to redraw a
// table. Printable text, any script, passes unchanged.
package text

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every rune that is not printable escaped, newlines
// and tabs included: for one value in a table cell or a line.
func Escape(s string) string { return escape(s, false) }

// EscapeLines is Escape that keeps newlines and tabs: for a block of text
// (an error message over several lines, a table already laid out).
func EscapeLines(s string) string { return escape(s, true) }

func escape(s string, lines bool) string {
	if clean(s, lines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case keep(r, lines):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// clean reports whether s needs no escaping, without allocating: the
// common case.
func clean(s string, lines bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c >= 0x80 {
			if c >= 0x80 {
				// Decode the rest rune by rune.
				for _, r := range s[i:] {
					if r == utf8.RuneError || !keep(r, lines) {
						return false
					}
				}
				return true
			}
			if !(lines && (c == '\n' || c == '\t')) {
				return false
			}
		}
	}
	return true
}

func keep(r rune, lines bool) bool {
	if lines && (r == '\n' || r == '\t') {
		return true
	}
	// A quote or a backslash is printable and stays as it is: this is
	// display, not a Go literal.
	return strconv.IsPrint(r)
}
