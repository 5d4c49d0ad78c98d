package volumespec

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// decoder is the decoder of volume files: hclstrict's typed getters plus a
// record of where each Volume field was written and which fields were
// already reported. Validate names problems by field path; Parse turns each
// path back into the range the user should look at.
type decoder struct {
	*hclstrict.Decoder
	// json is set for files in HCL's JSON syntax, where a map written as
	// an object cannot be told from a block (see mapField).
	json bool
	// values maps a field path to the range of its value: an attribute's
	// expression or a block's header.
	values map[string]hcl.Range
	// keys maps an attribute's field path to its name's range, for
	// problems about a key that should not be there at all.
	keys map[string]hcl.Range
	// reported holds field paths whose source was already wrong: the
	// placeholder left in the field would only repeat the complaint.
	reported map[string]bool
}

func newDecoder(json bool) *decoder {
	return &decoder{
		Decoder: &hclstrict.Decoder{}, json: json,
		values: map[string]hcl.Range{}, keys: map[string]hcl.Range{}, reported: map[string]bool{},
	}
}

func (d *decoder) at(path string, rng hcl.Range) { d.values[path] = rng }

func (d *decoder) failed(path string) { d.reported[path] = true }

// attr records attr's ranges under path and runs get, marking path as
// reported when get adds a diagnostic. False for a missing attribute or a
// failed get.
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

func (d *decoder) str(path string, attr *hcl.Attribute) (s string, ok bool) {
	ok = d.attr(path, attr, func() bool { s, ok = d.String(attr, nil); return ok })
	return s, ok
}

func (d *decoder) strList(path string, attr *hcl.Attribute) (l []string, ok bool) {
	ok = d.attr(path, attr, func() bool { l, ok = d.StringList(attr, nil); return ok })
	return l, ok
}

// required reports a missing attribute at where, the range of the block (or
// file) that lacks it. JSON bodies given to Validate have no notion of a
// missing key, so Validate refuses the empty value instead; marking the
// path reported keeps the file from hearing both.
func (d *decoder) required(path string, attr *hcl.Attribute, where hcl.Range, summary, format string, args ...any) bool {
	if attr != nil {
		return true
	}
	d.Errorf(where, summary, format, args...)
	d.failed(path)
	return false
}

// mapField reads a string map that Nomad's files write as a block
// (`parameters { k = "v" }`) and that HCL can also write as an attribute
// (`parameters = { "k" = "v" }`), the only way to quote keys or put several
// entries on one line. c must come from a schema holding both forms (see
// withMapFields). Absent, the map is nil.
func (d *decoder) mapField(path, key string, c *hcl.BodyContent) map[string]string {
	var blocks hcl.Blocks
	for _, b := range c.Blocks {
		if b.Type == key {
			blocks = append(blocks, b)
		}
	}
	attr := c.Attributes[key]
	if attr != nil && len(blocks) > 0 {
		d.Errorf(blocks[0].DefRange, "Duplicate "+key+" block",
			"%s is already written as an attribute at %s; write it once.", key, attr.NameRange)
		d.failed(path)
	}
	if attr != nil {
		var m map[string]string
		d.attr(path, attr, func() bool {
			v, ok := d.Value(attr, nil, cty.Map(cty.String))
			if !ok {
				return false
			}
			m = make(map[string]string, v.LengthInt())
			for it := v.ElementIterator(); it.Next(); {
				k, ev := it.Element()
				m[k.AsString()] = ev.AsString()
			}
			return true
		})
		return m
	}
	b := d.AtMostOne(blocks)
	if b == nil {
		return nil
	}
	d.at(path, b.DefRange)
	before := d.Count()
	m := d.StringMap(b, nil)
	if d.Count() > before {
		d.failed(path)
	}
	return m
}

// withMapFields adds the map keys to schema: as blocks always, and as
// attributes too in native syntax. JSON has one way to write a map, an
// object, which hcl reads as an attribute when the name is declared as both;
// declared as a block only, the object and Nomad's `[{...}]` form both work.
func withMapFields(schema hcl.BodySchema, json bool, keys ...string) *hcl.BodySchema {
	s := schema
	s.Attributes = append([]hcl.AttributeSchema(nil), schema.Attributes...)
	s.Blocks = append([]hcl.BlockHeaderSchema(nil), schema.Blocks...)
	for _, k := range keys {
		s.Blocks = append(s.Blocks, hcl.BlockHeaderSchema{Type: k})
		if !json {
			s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: k})
		}
	}
	return &s
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
