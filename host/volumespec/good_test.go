package volumespec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

func fullVolume() *Volume {
	return &Volume{
		ID: "pg-data", Name: "Postgres data", Type: "csi", PluginID: "mock.csi",
		SnapshotID:           "snap-42",
		RequestedCapacityMin: 10 << 30,
		RequestedCapacityMax: 1.5e12,
		RequestedCapabilities: []*Capability{
			{AccessMode: jobspec.AccessModeSingleNodeWriter, AttachmentMode: jobspec.AttachmentModeFilesystem},
			{AccessMode: jobspec.AccessModeMultiNodeReader, AttachmentMode: jobspec.AttachmentModeBlockDevice},
		},
		MountOptions: &MountOptions{FSType: "ext4", MountFlags: []string{"noatime", "nodev"}},
		RequestedTopologies: &TopologyRequest{
			Required: []*Topology{
				{Segments: map[string]string{"rack": "R1", "zone": "us-east-1a"}},
				{Segments: map[string]string{"rack": "R2"}},
			},
			Preferred: []*Topology{{Segments: map[string]string{"rack": "R1"}}},
		},
		Secrets:    map[string]string{"token": "xyzzy"},
		Parameters: map[string]string{"skuname": "Premium_LRS", "replicas": "3"},
		Context:    map[string]string{"endpoint": "http://192.168.1.101:9425"},
	}
}

func registerVolume() *Volume {
	return &Volume{
		ID: "legacy-1", Name: "legacy-1", Type: "csi", PluginID: "mockcsi", ExternalID: "vol-0abc123",
		RequestedCapacityMin: 1 << 30,
		RequestedCapabilities: []*Capability{
			{AccessMode: jobspec.AccessModeMultiNodeMultiWrite, AttachmentMode: jobspec.AttachmentModeFilesystem},
		},
		Context: map[string]string{"endpoint": "http://192.168.1.101:9425"},
	}
}

// TestGoodVolumeFiles parses each good file with the operation it is meant
// for and compares it with the volume it must yield; an HCL file and its
// JSON twin must yield the same.
func TestGoodVolumeFiles(t *testing.T) {
	for _, c := range []struct {
		file string
		op   Op
		want *Volume
	}{
		{"full.hcl", OpCreate, fullVolume()},
		{"full.json", OpCreate, fullVolume()},
		{"minimal.hcl", OpCreate, &Volume{
			ID: "scratch", Name: "scratch", Type: "csi", PluginID: "mockcsi",
			RequestedCapabilities: []*Capability{
				{AccessMode: jobspec.AccessModeSingleNodeWriter, AttachmentMode: jobspec.AttachmentModeBlockDevice},
			},
		}},
		{"register.hcl", OpRegister, registerVolume()},
		{"register.json", OpRegister, registerVolume()},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", "good", c.file)
			got, err := parseFile(path, c.op)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				g, _ := json.MarshalIndent(got, "", "  ")
				w, _ := json.MarshalIndent(c.want, "", "  ")
				t.Fatalf("got\n%s\nwant\n%s", g, w)
			}
			// The rules common to both operations are a subset.
			if _, err := ParseFile(path); err != nil {
				t.Errorf("ParseFile: %v", err)
			}
			if err := ValidateFor(got, c.op); err != nil {
				t.Errorf("a parsed volume fails ValidateFor: %v", err)
			}
		})
	}
}

func TestExamples(t *testing.T) {
	fromHCL, err := ParseFor([]byte(ExampleHCL), "volume.hcl", OpCreate)
	if err != nil {
		t.Fatalf("ExampleHCL: %v", err)
	}
	fromJSON, err := ParseFor([]byte(ExampleJSON), "volume.json", OpCreate)
	if err != nil {
		t.Fatalf("ExampleJSON: %v", err)
	}
	if !reflect.DeepEqual(fromHCL, fromJSON) {
		t.Errorf("the examples differ:\n%+v\n%+v", fromHCL, fromJSON)
	}
	if fromHCL.PluginID != "mockcsi" {
		t.Errorf("example plugin_id = %q, want mockcsi", fromHCL.PluginID)
	}
	// ExampleJSON is also recognised by content, as a file named
	// otherwise (or read from stdin) would be.
	if _, err := Parse([]byte(ExampleJSON), "volume"); err != nil {
		t.Errorf("ExampleJSON without a .json name: %v", err)
	}
}

// The volume files under examples/volumes are documentation: each must be
// a valid create request for the demo's plugin, and the job that uses one
// (examples/volume-job.hcl) must name it.
func TestExampleVolumeFiles(t *testing.T) {
	files, err := filepath.Glob("../../examples/volumes/*.hcl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example volume files: %v", err)
	}
	for _, f := range files {
		v, err := parseFile(f, OpCreate)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if v.PluginID != "mockcsi" {
			t.Errorf("%s: plugin_id %q, want the demo's mockcsi", f, v.PluginID)
		}
	}
	job, err := os.ReadFile("../../examples/volume-job.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(job), `source          = "data"`) {
		t.Error("examples/volume-job.hcl does not claim examples/volumes/data.hcl's volume")
	}
	// The quick start creates examples/volumes/data.hcl, the README's
	// volume walkthrough then what `volume init` writes: two volumes, or
	// the second create failed with "already exists with a different
	// RequestedCapabilities" (issue 26 §7). The walkthrough names myvol.
	ex, err := ParseFor([]byte(ExampleHCL), "volume.hcl", OpCreate)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if v, err := parseFile(f, OpCreate); err == nil && v.ID == ex.ID {
			t.Errorf("volume init's example has the ID %q of %s", ex.ID, f)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "volume delete "+ex.ID) {
		t.Errorf("the README's volume walkthrough does not use volume init's ID %q", ex.ID)
	}
}
