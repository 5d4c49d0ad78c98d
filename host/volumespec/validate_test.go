package volumespec

import (
	"errors"
	"slices"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

func validVolume() *Volume {
	return &Volume{
		ID: "v1", Name: "v1", Type: "csi", PluginID: "mockcsi",
		RequestedCapabilities: []*Capability{
			{AccessMode: jobspec.AccessModeSingleNodeWriter, AttachmentMode: jobspec.AttachmentModeFilesystem},
		},
	}
}

// fields returns the field paths err names, in order.
func fields(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error is %T, not a *ValidationError: %v", err, err)
	}
	var out []string
	for _, p := range ve.Problems {
		out = append(out, p.Field)
	}
	return out
}

// TestValidateJSONBodies covers what only a Volume built elsewhere (an API
// body) can hold: nils, negative numbers, empty keys. Problems must name
// the Go field.
func TestValidateJSONBodies(t *testing.T) {
	for _, c := range []struct {
		name   string
		edit   func(v *Volume)
		fields []string
	}{
		{"valid", func(*Volume) {}, nil},
		{"empty id", func(v *Volume) { v.ID, v.Name = "", "" }, []string{"ID"}},
		{"long id", func(v *Volume) { v.ID = string(make([]byte, 129)); v.Name = v.ID }, []string{"ID"}},
		{"dot id", func(v *Volume) { v.ID, v.Name = ".", "." }, []string{"ID"}},
		{"empty name", func(v *Volume) { v.Name = "" }, []string{"Name"}},
		{"type", func(v *Volume) { v.Type = "" }, []string{"Type"}},
		{"plugin", func(v *Volume) { v.PluginID = "a/b" }, []string{"PluginID"}},
		{"negative", func(v *Volume) { v.RequestedCapacityMin, v.RequestedCapacityMax = -1, -2 },
			[]string{"RequestedCapacityMin", "RequestedCapacityMax"}},
		{"max below min", func(v *Volume) { v.RequestedCapacityMin, v.RequestedCapacityMax = 2, 1 },
			[]string{"RequestedCapacityMax"}},
		{"min alone", func(v *Volume) { v.RequestedCapacityMin = 1 << 40 }, nil},
		{"no capability", func(v *Volume) { v.RequestedCapabilities = nil }, []string{"RequestedCapabilities"}},
		{"nil capability", func(v *Volume) { v.RequestedCapabilities = append(v.RequestedCapabilities, nil) },
			[]string{"RequestedCapabilities[1]"}},
		{"bad modes", func(v *Volume) { v.RequestedCapabilities[0] = &Capability{AccessMode: "rw", AttachmentMode: "fs"} },
			[]string{"RequestedCapabilities[0].AccessMode", "RequestedCapabilities[0].AttachmentMode"}},
		{"duplicate capability", func(v *Volume) {
			c := *v.RequestedCapabilities[0]
			v.RequestedCapabilities = append(v.RequestedCapabilities, &c)
		}, []string{"RequestedCapabilities[1]"}},
		{"snapshot and clone", func(v *Volume) { v.SnapshotID, v.CloneID = "s", "c" }, []string{"CloneID"}},
		{"mount options, block only", func(v *Volume) {
			v.RequestedCapabilities[0].AttachmentMode = jobspec.AttachmentModeBlockDevice
			v.MountOptions = &MountOptions{FSType: "ext4"}
		}, []string{"MountOptions"}},
		{"empty mount flag", func(v *Volume) { v.MountOptions = &MountOptions{MountFlags: []string{"ro", " "}} },
			[]string{"MountOptions.MountFlags[1]"}},
		{"topologies", func(v *Volume) {
			v.RequestedTopologies = &TopologyRequest{
				Required:  []*Topology{nil, {}},
				Preferred: []*Topology{{Segments: map[string]string{"": "x"}}},
			}
		}, []string{"RequestedTopologies.Required[0]", "RequestedTopologies.Required[1].Segments",
			`RequestedTopologies.Preferred[0].Segments[""]`}},
		{"empty map keys", func(v *Volume) {
			v.Secrets = map[string]string{"": "x"}
			v.Parameters = map[string]string{"": "x"}
			v.Context = map[string]string{"": "x"}
		}, []string{`Secrets[""]`, `Parameters[""]`, `Context[""]`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := validVolume()
			c.edit(v)
			if got := fields(t, Validate(v)); !slices.Equal(got, c.fields) {
				t.Errorf("problems name %q, want %q", got, c.fields)
			}
		})
	}
	if got := fields(t, Validate(nil)); !slices.Equal(got, []string{""}) {
		t.Errorf("Validate(nil) names %q", got)
	}
}

func TestValidateFor(t *testing.T) {
	for _, c := range []struct {
		name   string
		op     Op
		edit   func(v *Volume)
		fields []string
	}{
		{"create", OpCreate, func(*Volume) {}, nil},
		{"create from snapshot", OpCreate, func(v *Volume) { v.SnapshotID = "s" }, nil},
		{"create with external id", OpCreate, func(v *Volume) { v.ExternalID = "x" }, []string{"ExternalID"}},
		{"register", OpRegister, func(v *Volume) { v.ExternalID = "x" }, nil},
		{"register without external id", OpRegister, func(*Volume) {}, []string{"ExternalID"}},
		{"register from snapshot", OpRegister, func(v *Volume) { v.ExternalID, v.SnapshotID = "x", "s" }, []string{"SnapshotID"}},
		{"register from clone", OpRegister, func(v *Volume) { v.ExternalID, v.CloneID = "x", "c" }, []string{"CloneID"}},
		{"unknown op", Op(9), func(*Volume) {}, []string{""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := validVolume()
			c.edit(v)
			if got := fields(t, ValidateFor(v, c.op)); !slices.Equal(got, c.fields) {
				t.Errorf("problems name %q, want %q", got, c.fields)
			}
		})
	}
}

func TestCanonicalize(t *testing.T) {
	v := &Volume{ID: "v1"}
	Canonicalize(v)
	if v.Name != "v1" {
		t.Errorf("Name = %q, want the id", v.Name)
	}
	Canonicalize(nil)
}

func TestValidationErrorText(t *testing.T) {
	v := validVolume()
	v.ID, v.Name, v.RequestedCapabilities[0].AccessMode = "", "", "rw"
	err := Validate(v)
	const want = "ID: Invalid id: The volume id must not be empty.\n" +
		`RequestedCapabilities[0].AccessMode: Invalid access_mode: access_mode must be one of ["single-node-reader-only" "single-node-writer" "multi-node-reader-only" "multi-node-single-writer" "multi-node-multi-writer"], got "rw".`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}
