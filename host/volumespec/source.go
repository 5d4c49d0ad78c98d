package volumespec

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// decoder is the decoder of volume files. Validate names problems by
// Volume field path; the hclstrict.Fields record lets Parse place each one
// where the user wrote it.
type decoder struct {
	*hclstrict.Fields
	// json is set for files in HCL's JSON syntax, where a map written as
	// an object cannot be told from a block (see mapField).
	json bool
}

func newDecoder(json bool) *decoder {
	return &decoder{Fields: hclstrict.NewFields(), json: json}
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
		d.Fail(path)
	}
	if attr != nil {
		var m map[string]string
		d.Attr(path, attr, func() bool {
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
	d.At(path, b.DefRange)
	before := d.Count()
	m := d.StringMap(b, nil)
	if d.Count() > before {
		d.Fail(path)
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
