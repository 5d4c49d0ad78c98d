// Package hclstrict is the strict HCL decoding shared by job files
// (host/jobspec), volume files (host/volumespec) and the agent
// configuration (host/config).
//
// All three are decoded by hand against hcl.BodySchema instead of with
// gohcl struct tags. Hand decoding keeps the hcl.Range of every attribute and
// block, so validation that happens after type conversion (a signal name, a
// duration, a reference to an undeclared volume) can still point at the exact
// characters it is about. gohcl loses ranges once a value lands in a struct.
//
// Invariants:
//   - Every problem becomes an hcl.Diagnostic with a Subject range; a
//     Decoder never panics on input and never stops at the first error.
//   - NewError is the only way diagnostics become a Go error; the resulting
//     *DiagnosticsError carries the parser's Files so its text can quote the
//     source, and is what callers test for with errors.As.
//   - Null means unset: getters treat `x = null` like a missing `x`.
//   - Variables are opt-in per attribute through a Scope. With a nil Scope,
//     hcl reports any reference as "Variables not allowed", so a runtime
//     placeholder cannot silently end up as literal text in a key that is
//     never interpolated.
//
// Error text is hcl's own diagnostic format (NewDiagnosticTextWriter over the
// parser's Files) with a "file:line:col: summary" first line and a caret line
// under the offending range, since hcl only highlights with terminal colours.
//
// Semantic rules are not checked while decoding: they live in validators
// over Go values (jobspec.Validate, volumespec.Validate), so a value that
// arrives as an API body is held to them too. Validators name what is wrong
// by Go field path as Problems; Fields is a Decoder that records where each
// field path was written and places those Problems back in the file, at the
// field or the closest enclosing one that was written.
//
// CheckSource runs before any parser: hcl's parsers and evaluator recurse
// once per level of nesting and per link of an operator chain with no
// bound of their own, so a deep enough file overflows the goroutine stack,
// which ends the process. It refuses a file over its kind's size limit,
// nested deeper than MaxNestingDepth or chaining more than
// MaxExpressionOperators links, with one located diagnostic, after one
// pass over the bytes that reads strings, heredocs and comments exactly
// as hcl's scanner does (see scan.go for how).
//
// The corpustest subpackage checks directories of malformed files whose
// first lines say which diagnostics they must produce and where.
package hclstrict
