package hclstrict

import (
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// Fields is a Decoder that also remembers where each field of the decoded Go
// value was written, by field path ("TaskGroups[0].Tasks[1].Name",
// `Parameters["k"]`). Semantic rules live in validators that see only Go
// values, so they can judge JSON input too; they name problems by field
// path, and Fields turns those paths back into source ranges (see Place).
//
// It also remembers which paths the decoder itself already reported: a field
// whose HCL was wrong holds a placeholder, and validating that placeholder
// would repeat the complaint in more confusing words.
type Fields struct {
	Decoder
	// values maps a field path to the range of its value: an attribute's
	// expression, a block's header, a name's label.
	values map[string]hcl.Range
	// keys maps an attribute's field path to its name's range, for
	// problems about a key that should not be there at all.
	keys     map[string]hcl.Range
	reported map[string]bool
}

// NewFields returns an empty Fields.
func NewFields() *Fields {
	return &Fields{values: map[string]hcl.Range{}, keys: map[string]hcl.Range{}, reported: map[string]bool{}}
}

// At records that the field path is written at rng.
func (f *Fields) At(path string, rng hcl.Range) { f.values[path] = rng }

// Unplace forgets where path is written, so that problems about it are
// reported at the enclosing field.
func (f *Fields) Unplace(path string) {
	delete(f.values, path)
	delete(f.keys, path)
}

// Inherit places every path under dst that has no place of its own where
// the same path under src is written, for values copied from src to dst
// after decoding (defaults a block passes down to its children).
func (f *Fields) Inherit(dst, src string) {
	for p, rng := range f.values {
		if p == src || strings.HasPrefix(p, src+".") {
			q := dst + strings.TrimPrefix(p, src)
			if _, ok := f.values[q]; !ok {
				f.values[q] = rng
			}
		}
	}
}

// Fail marks path as already reported.
func (f *Fields) Fail(path string) { f.reported[path] = true }

// Attr records attr's ranges under path and runs get, marking path as
// reported when get adds a diagnostic. It returns false for a missing
// attribute or a failed get.
func (f *Fields) Attr(path string, attr *hcl.Attribute, get func() bool) bool {
	if attr == nil {
		return false
	}
	f.values[path] = attr.Expr.Range()
	f.keys[path] = attr.NameRange
	before := f.Count()
	ok := get()
	if f.Count() > before {
		f.Fail(path)
	}
	return ok
}

// FieldString is String for the field path.
func (f *Fields) FieldString(path string, attr *hcl.Attribute, scope Scope) (s string, ok bool) {
	ok = f.Attr(path, attr, func() bool { s, ok = f.String(attr, scope); return ok })
	return s, ok
}

// FieldStringList is StringList for the field path.
func (f *Fields) FieldStringList(path string, attr *hcl.Attribute, scope Scope) (l []string, ok bool) {
	ok = f.Attr(path, attr, func() bool { l, ok = f.StringList(attr, scope); return ok })
	return l, ok
}

// FieldBool is Bool for the field path.
func (f *Fields) FieldBool(path string, attr *hcl.Attribute) (b bool, ok bool) {
	ok = f.Attr(path, attr, func() bool { b, ok = f.Bool(attr); return ok })
	return b, ok
}

// FieldWhole is Whole for the field path: the range check is the
// validator's, so that JSON input meets it too.
func (f *Fields) FieldWhole(path string, attr *hcl.Attribute, lo, hi int) (n int, ok bool) {
	ok = f.Attr(path, attr, func() bool { n, ok = f.Whole(attr, lo, hi); return ok })
	return n, ok
}

// FieldDuration is Duration for the field path.
func (f *Fields) FieldDuration(path string, attr *hcl.Attribute) (v time.Duration, ok bool) {
	ok = f.Attr(path, attr, func() bool { v, ok = f.Duration(attr); return ok })
	return v, ok
}

// Required reports a missing attribute at where, the range of the block (or
// file) that lacks it, and tells whether attr is there. A missing key is a
// matter of the file's shape; JSON input has no such thing, so validators
// refuse the empty value left behind instead, and marking path reported
// keeps a file from hearing both.
func (f *Fields) Required(path string, attr *hcl.Attribute, where hcl.Range, summary, format string, args ...any) bool {
	if attr != nil {
		return true
	}
	f.Errorf(where, summary, format, args...)
	f.Fail(path)
	return false
}

// Place reports each problem at where its field, or failing that the
// closest enclosing field, was written, leaving out fields the decoder
// already reported. filename places a problem no field encloses; decoders
// that record the root value at "" never need it.
func (f *Fields) Place(ps []Problem, filename string) {
	for _, p := range ps {
		if f.reported[p.Field] {
			continue
		}
		rng, ok := f.rangeOf(p.Field, p.atKey)
		if !ok {
			rng = hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos}
		}
		f.Errorf(rng, p.Summary, "%s", p.Detail)
	}
}

// rangeOf returns where the field path, or failing that the closest
// enclosing field, was written. A field the file never wrote (a default, a
// missing attribute) is thereby reported at its block.
func (f *Fields) rangeOf(path string, atKey bool) (hcl.Range, bool) {
	if atKey {
		if r, ok := f.keys[path]; ok {
			return r, true
		}
	}
	best, found := "", false
	var rng hcl.Range
	for p, r := range f.values {
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
