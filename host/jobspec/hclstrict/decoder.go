package hclstrict

import (
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Scope supplies the evaluation context for one expression. A nil Scope
// means "no variables and no functions here", which makes hcl itself report
// any reference as "Variables not allowed" at the reference.
type Scope func(expr hcl.Expression) (*hcl.EvalContext, hcl.Diagnostics)

// Decoder accumulates diagnostics while a body is decoded by hand. Decoding
// never stops at the first problem: every typed getter reports into the
// decoder and returns ok=false, and the caller carries on with the next key so
// that one run of the parser lists every mistake in the file.
//
// Getters treat a missing attribute (nil) and an explicit null the same: the
// value is unset and ok is false without a diagnostic. That is HCL's meaning
// of null and lets callers write `if v, ok := d.String(attrs["x"], nil); ok`.
type Decoder struct {
	diags hcl.Diagnostics
}

// Diags returns everything reported so far.
func (d *Decoder) Diags() hcl.Diagnostics { return d.diags }

// Count is the number of diagnostics so far. Comparing counts around a call
// tells whether that call found a problem, so follow-on errors ("missing
// group" after a malformed group header) can be left out.
func (d *Decoder) Count() int { return len(d.diags) }

// Add appends diagnostics from elsewhere (the parser, Content calls).
func (d *Decoder) Add(diags hcl.Diagnostics) { d.diags = append(d.diags, diags...) }

// Errorf reports an error about the source range rng.
func (d *Decoder) Errorf(rng hcl.Range, summary, format string, args ...any) {
	r := rng
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  &r,
	})
}

// Content decodes body against schema; unknown attributes and blocks, missing
// required attributes and wrong label counts become diagnostics with their
// locations. The returned content is never nil.
func (d *Decoder) Content(body hcl.Body, schema *hcl.BodySchema) *hcl.BodyContent {
	content, diags := body.Content(schema)
	d.Add(diags)
	if content == nil {
		content = &hcl.BodyContent{Attributes: hcl.Attributes{}}
	}
	return content
}

// AtMostOne returns the only block of blocks (all of one type), or nil, and
// reports every repetition at the repeated block.
func (d *Decoder) AtMostOne(blocks hcl.Blocks) *hcl.Block {
	if len(blocks) == 0 {
		return nil
	}
	for _, b := range blocks[1:] {
		d.Errorf(b.DefRange, fmt.Sprintf("Duplicate %s block", b.Type),
			"Only one %q block is allowed here; the first one is at %s.", b.Type, blocks[0].DefRange)
	}
	return blocks[0]
}

// Value evaluates attr in scope and converts it to ty.
func (d *Decoder) Value(attr *hcl.Attribute, scope Scope, ty cty.Type) (cty.Value, bool) {
	if attr == nil {
		return cty.NilVal, false
	}
	var ctx *hcl.EvalContext
	if scope != nil {
		var diags hcl.Diagnostics
		ctx, diags = scope(attr.Expr)
		d.Add(diags)
		if diags.HasErrors() {
			return cty.NilVal, false
		}
	}
	v, diags := attr.Expr.Value(ctx)
	d.Add(diags)
	if diags.HasErrors() || v.IsNull() {
		return cty.NilVal, false
	}
	if !v.IsWhollyKnown() || v.IsMarked() {
		d.Errorf(attr.Expr.Range(), "Invalid value", "The value of %q must be known when the file is read.", attr.Name)
		return cty.NilVal, false
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		d.Errorf(attr.Expr.Range(), "Incorrect attribute value type",
			"Inappropriate value for attribute %q: %s required.", attr.Name, ty.FriendlyName())
		return cty.NilVal, false
	}
	if (ty.IsListType() || ty.IsMapType()) && cv.LengthInt() > 0 {
		for it := cv.ElementIterator(); it.Next(); {
			if _, ev := it.Element(); ev.IsNull() {
				d.Errorf(attr.Expr.Range(), "Invalid value", "The elements of %q must not be null.", attr.Name)
				return cty.NilVal, false
			}
		}
	}
	return cv, true
}

// String reads a string attribute. Numbers and bools convert, as in any HCL
// tool.
func (d *Decoder) String(attr *hcl.Attribute, scope Scope) (string, bool) {
	v, ok := d.Value(attr, scope, cty.String)
	if !ok {
		return "", false
	}
	return v.AsString(), true
}

// Bool reads a bool attribute.
func (d *Decoder) Bool(attr *hcl.Attribute) (bool, bool) {
	v, ok := d.Value(attr, nil, cty.Bool)
	if !ok {
		return false, false
	}
	return v.True(), true
}

// Int reads a whole number in [lo, hi]. Out-of-range values are reported
// here rather than by the caller so that the message always names the range.
func (d *Decoder) Int(attr *hcl.Attribute, lo, hi int) (int, bool) {
	i, ok := d.Whole(attr, lo, hi)
	if !ok {
		return 0, false
	}
	if i < lo || i > hi {
		d.Errorf(attr.Expr.Range(), "Value out of range", "%q must be between %d and %d, got %d.", attr.Name, lo, hi, i)
		return 0, false
	}
	return i, true
}

// Whole reads a whole number that fits in 32 bits and leaves the range check
// to the caller, for callers whose range rules live in a validator shared
// with non-HCL input. lo and hi only word the message for a value that is
// not a whole number, so it reads the same as Int's.
func (d *Decoder) Whole(attr *hcl.Attribute, lo, hi int) (int, bool) {
	v, ok := d.Value(attr, nil, cty.Number)
	if !ok {
		return 0, false
	}
	bf := v.AsBigFloat()
	i, acc := bf.Int64()
	if !bf.IsInt() || acc != big.Exact || i < math.MinInt32 || i > math.MaxInt32 {
		d.Errorf(attr.Expr.Range(), "Invalid number", "%q must be a whole number between %d and %d, got %s.", attr.Name, lo, hi, bf.Text('g', 10))
		return 0, false
	}
	return int(i), true
}

// Duration reads a non-negative Go duration string such as "30s" or "1h30m".
// Bare numbers are refused: Nomad reads them as nanoseconds, which is never
// what anyone meant.
func (d *Decoder) Duration(attr *hcl.Attribute) (time.Duration, bool) {
	if attr == nil {
		return 0, false
	}
	v, diags := attr.Expr.Value(nil)
	if !diags.HasErrors() && !v.IsNull() && v.IsWhollyKnown() && v.Type() != cty.String {
		d.Errorf(attr.Expr.Range(), "Invalid duration", "%q must be a duration string such as \"30s\" or \"5m\".", attr.Name)
		return 0, false
	}
	s, ok := d.String(attr, nil)
	if !ok {
		return 0, false
	}
	dur, err := time.ParseDuration(s)
	if err != nil {
		d.Errorf(attr.Expr.Range(), "Invalid duration", "%q must be a duration string such as \"30s\" or \"5m\", got %q.", attr.Name, s)
		return 0, false
	}
	if dur < 0 {
		d.Errorf(attr.Expr.Range(), "Invalid duration", "%q must not be negative, got %q.", attr.Name, s)
		return 0, false
	}
	return dur, true
}

// StringList reads a list of strings.
func (d *Decoder) StringList(attr *hcl.Attribute, scope Scope) ([]string, bool) {
	v, ok := d.Value(attr, scope, cty.List(cty.String))
	if !ok {
		return nil, false
	}
	out := make([]string, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		out = append(out, ev.AsString())
	}
	return out, true
}

// StringMap reads a block whose attributes are the map's entries, such as
// `env { KEY = "v" }`. Nested blocks are reported by hcl.
//
// A missing block yields an empty map, never nil, so consumers can range and
// index without checks.
func (d *Decoder) StringMap(block *hcl.Block, scope Scope) map[string]string {
	if block == nil {
		return map[string]string{}
	}
	attrs, diags := block.Body.JustAttributes()
	d.Add(diags)
	out := make(map[string]string, len(attrs))
	for name, attr := range attrs {
		if s, ok := d.String(attr, scope); ok {
			out[name] = s
		}
	}
	return out
}
