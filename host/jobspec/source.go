package jobspec

import (
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// decoder is the HCL decoder of job files: hclstrict's typed getters plus a
// record of where each Job field was written and which fields the decoder
// already reported. Validate names problems by field path; Parse turns each
// path back into the range the user should look at.
type decoder struct {
	*hclstrict.Decoder
	// values maps a field path to the range of its value: an attribute's
	// expression, a block's header, a name's label.
	values map[string]hcl.Range
	// keys maps an attribute's field path to its name, for problems about a
	// key that should not be there at all.
	keys map[string]hcl.Range
	// reported holds field paths whose HCL was already wrong (a value that
	// did not convert, a required attribute that is missing): validating
	// the placeholder left in the field would only repeat the complaint in
	// a more confusing way.
	reported map[string]bool
}

func newDecoder() *decoder {
	return &decoder{
		Decoder: &hclstrict.Decoder{},
		values:  map[string]hcl.Range{}, keys: map[string]hcl.Range{}, reported: map[string]bool{},
	}
}

// at records where the field path is written.
func (d *decoder) at(path string, rng hcl.Range) { d.values[path] = rng }

// unplace forgets where path is written, so that problems about it are
// reported at the enclosing block.
// inherit places every path under dst that has no place of its own where
// the same path under src is written.
func (d *decoder) inherit(dst, src string) {
	for p, rng := range d.values {
		if p == src || strings.HasPrefix(p, src+".") {
			q := dst + strings.TrimPrefix(p, src)
			if _, ok := d.values[q]; !ok {
				d.values[q] = rng
			}
		}
	}
}

func (d *decoder) unplace(path string) {
	delete(d.values, path)
	delete(d.keys, path)
}

// failed marks path as already reported.
func (d *decoder) failed(path string) { d.reported[path] = true }

// attr records attr's ranges under path and runs get, marking path as
// reported when get adds a diagnostic. Returns false for a missing attribute
// or a failed get.
func (d *decoder) attr(path string, attr *hcl.Attribute, get func() bool) bool {
	if attr == nil {
		return false
	}
	d.values[path] = attr.Expr.Range()
	d.keys[path] = attr.NameRange
	before := d.Count()
	ok := get()
	if d.Count() > before {
		d.failed(path)
	}
	return ok
}

func (d *decoder) str(path string, attr *hcl.Attribute, scope hclstrict.Scope) (s string, ok bool) {
	ok = d.attr(path, attr, func() bool { s, ok = d.String(attr, scope); return ok })
	return s, ok
}

func (d *decoder) strList(path string, attr *hcl.Attribute, scope hclstrict.Scope) (l []string, ok bool) {
	ok = d.attr(path, attr, func() bool { l, ok = d.StringList(attr, scope); return ok })
	return l, ok
}

func (d *decoder) boolean(path string, attr *hcl.Attribute) (b bool, ok bool) {
	ok = d.attr(path, attr, func() bool { b, ok = d.Bool(attr); return ok })
	return b, ok
}

// whole reads an int whose range Validate checks; lo and hi word the message
// for a value that is not a whole number.
func (d *decoder) whole(path string, attr *hcl.Attribute, lo, hi int) (n int, ok bool) {
	ok = d.attr(path, attr, func() bool { n, ok = d.Whole(attr, lo, hi); return ok })
	return n, ok
}

func (d *decoder) duration(path string, attr *hcl.Attribute) (v time.Duration, ok bool) {
	ok = d.attr(path, attr, func() bool { v, ok = d.Duration(attr); return ok })
	return v, ok
}

// required reports a missing attribute at the block that lacks it. A
// missing key is a matter of the file's shape; JSON has no such thing, so
// Validate instead refuses the empty value left behind, which is marked
// reported here.
func (d *decoder) required(path string, attr *hcl.Attribute, b *hcl.Block, summary, format string, args ...any) bool {
	if attr != nil {
		return true
	}
	d.Errorf(b.DefRange, summary, format, args...)
	d.failed(path)
	return false
}

// rangeOf returns where the field path, or failing that the closest
// enclosing field, was written. A field the file never wrote (a default, a
// missing attribute) is thereby reported at its block.
func (d *decoder) rangeOf(path string, atKey bool) (hcl.Range, bool) {
	if atKey {
		if r, ok := d.keys[path]; ok {
			return r, true
		}
	}
	best, found := "", false
	var rng hcl.Range
	for p, r := range d.values {
		if !isFieldPrefix(p, path) || (found && len(p) <= len(best)) {
			continue
		}
		best, rng, found = p, r, true
	}
	return rng, found
}

// isFieldPrefix tells whether prefix is path or one of its enclosing fields.
func isFieldPrefix(prefix, path string) bool {
	if len(prefix) > len(path) || path[:len(prefix)] != prefix {
		return false
	}
	if len(prefix) == len(path) || prefix == "" {
		return true
	}
	c := path[len(prefix)]
	return c == '.' || c == '['
}
