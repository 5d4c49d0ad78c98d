package volumes

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A clone of a decoded record equals a fresh decode of the same bytes
// (the state store's decode cache hands out clones in place of decodes),
// whether its slices and maps are absent, null, empty, hold null entries
// or values; and it shares nothing with the original.
func TestVolumeCloneEqualsDecode(t *testing.T) {
	docs := map[string]string{
		"absent": `{"ID":"v"}`,
		"null": `{"ID":"v","RequestedCapabilities":null,"MountOptions":null,"RequestedTopologies":null,
			"Secrets":null,"Parameters":null,"Context":null,"AccessibleTopology":null,"Claims":null,"PublishContext":null}`,
		"empty": `{"ID":"v","RequestedCapabilities":[],"MountOptions":{"MountFlags":[]},
			"RequestedTopologies":{"Required":[],"Preferred":[]},"Secrets":{},"Parameters":{},"Context":{},
			"AccessibleTopology":[],"Claims":[{"AllocID":"a","MountOptions":{"MountFlags":[]}}],"PublishContext":{}}`,
		"null entries": `{"ID":"v","RequestedCapabilities":[null],"RequestedTopologies":{"Required":[null],"Preferred":[{"Segments":null}]},
			"AccessibleTopology":[null],"Claims":[null]}`,
		"values": `{"ID":"v","RequestedCapabilities":[{"AccessMode":"single-node-writer","AttachmentMode":"file-system"}],
			"MountOptions":{"FSType":"ext4","MountFlags":["ro"]},"RequestedTopologies":{"Required":[{"Segments":{"r":"1"}}]},
			"Secrets":{"s":"1"},"Parameters":{"p":"1"},"Context":{"c":"1"},"AccessibleTopology":[{"Segments":{"z":"a"}}],
			"Claims":[{"AllocID":"a","MountOptions":{"MountFlags":["x"]}}],"PublishContext":{"k":"v"},
			"CreateTime":"2024-01-02T03:04:05.000000006+02:00"}`,
	}
	decode := func(t *testing.T, doc string) *Volume {
		t.Helper()
		v := new(Volume)
		if err := json.Unmarshal([]byte(doc), v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			orig := decode(t, doc)
			c := orig.Clone()
			if fresh := decode(t, doc); !reflect.DeepEqual(c, fresh) {
				t.Fatalf("clone %#v\n != decode %#v", c, fresh)
			}
			// Nothing is shared: change every reachable value of the
			// clone and the original still equals a decode.
			for _, cp := range c.RequestedCapabilities {
				if cp != nil {
					cp.AccessMode = "changed"
				}
			}
			if c.MountOptions != nil {
				c.MountOptions.FSType = "changed"
				for i := range c.MountOptions.MountFlags {
					c.MountOptions.MountFlags[i] = "changed"
				}
			}
			if c.RequestedTopologies != nil {
				for _, ts := range [][]*Topology{c.RequestedTopologies.Required, c.RequestedTopologies.Preferred} {
					for _, tp := range ts {
						if tp != nil && tp.Segments != nil {
							tp.Segments["changed"] = "1"
						}
					}
				}
			}
			for _, tp := range c.AccessibleTopology {
				if tp != nil && tp.Segments != nil {
					tp.Segments["changed"] = "1"
				}
			}
			for _, m := range []map[string]string{c.Secrets, c.Parameters, c.Context, c.PublishContext} {
				if m != nil {
					m["changed"] = "1"
				}
			}
			for _, cl := range c.Claims {
				if cl != nil {
					cl.State = "changed"
					if cl.MountOptions != nil {
						for i := range cl.MountOptions.MountFlags {
							cl.MountOptions.MountFlags[i] = "changed"
						}
					}
				}
			}
			if fresh := decode(t, doc); !reflect.DeepEqual(orig, fresh) {
				t.Fatalf("a change to the clone reached the original: %#v", orig)
			}
		})
	}
}
