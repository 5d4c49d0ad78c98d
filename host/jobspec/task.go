package jobspec

import (
	"encoding/hex"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// Task defaults, as in Nomad.
const (
	DefaultKillTimeout   = 5 * time.Second
	DefaultKillSignal    = "SIGINT"
	DefaultLogMaxFiles   = 10
	DefaultLogMaxFileMB  = 10
	DefaultCPU           = 100
	DefaultMemoryMB      = 300
	minMemoryMB          = 10
	checksumPrefixSHA256 = "sha256:"
)

var taskSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "driver"}, {Name: "kill_timeout"}, {Name: "kill_signal"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "config"}, {Type: "env"}, {Type: "meta"}, {Type: "resources"}, {Type: "restart"},
		{Type: "logs"}, {Type: "csi_plugin"}, {Type: "volume_mount"},
	},
}

var configSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "command"}, {Name: "args"}, {Name: "work_dir"}, {Name: "checksum"}},
}

var resourcesSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "cpu"}, {Name: "memory"}},
}

var logsSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "max_files"}, {Name: "max_file_size"}, {Name: "disabled"}},
}

var volumeMountSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "volume"}, {Name: "destination"}, {Name: "read_only"}},
}

// decodeTask decodes one task of g, whose restart policy is already merged.
// The returned range is the task's csi_plugin block, for errors that involve
// other tasks.
func decodeTask(d *hclstrict.Decoder, g *TaskGroup, block *hcl.Block) (*Task, hcl.Range) {
	t := &Task{
		Name:        block.Labels[0],
		KillTimeout: DefaultKillTimeout,
		KillSignal:  DefaultKillSignal,
		Logs:        &LogConfig{MaxFiles: DefaultLogMaxFiles, MaxFileSizeMB: DefaultLogMaxFileMB},
		Resources:   &Resources{CPU: DefaultCPU, MemoryMB: DefaultMemoryMB},
	}
	checkName(d, "task name", t.Name, labelRange(block))
	c := d.Content(block.Body, taskSchema)

	if attr := c.Attributes["driver"]; attr == nil {
		d.Errorf(block.DefRange, "Missing driver", "Task %q needs `driver = \"raw_exec\"` or `driver = \"go_plugin\"`.", t.Name)
	} else if s, ok := d.String(attr, nil); ok {
		if s != DriverRawExec && s != DriverGoPlugin {
			d.Errorf(attr.Expr.Range(), "Unsupported driver", "The driver must be \"raw_exec\" or \"go_plugin\", got %q.", s)
		}
		t.Driver = s
	}
	if v, ok := d.Duration(c.Attributes["kill_timeout"]); ok {
		t.KillTimeout = v
	}
	if attr := c.Attributes["kill_signal"]; attr != nil {
		if s, ok := d.String(attr, nil); ok {
			if _, known := SignalByName(s); !known {
				d.Errorf(attr.Expr.Range(), "Invalid kill_signal", "kill_signal must be one of %s, got %q.",
					strings.Join(KillSignalNames(), ", "), s)
			}
			t.KillSignal = s
		}
	}

	blocks := map[string]hcl.Blocks{}
	for _, b := range c.Blocks {
		blocks[b.Type] = append(blocks[b.Type], b)
	}

	if cb := d.AtMostOne(blocks["config"]); cb == nil {
		d.Errorf(block.DefRange, "Missing config", "Task %q needs a `config { command = \"...\" }` block.", t.Name)
	} else {
		t.Config = decodeTaskConfig(d, t.Driver, cb)
	}
	t.Env = d.StringMap(d.AtMostOne(blocks["env"]), runtimeScope)
	t.Meta = d.StringMap(d.AtMostOne(blocks["meta"]), nil)

	if rb := d.AtMostOne(blocks["resources"]); rb != nil {
		rc := d.Content(rb.Body, resourcesSchema)
		if v, ok := d.Int(rc.Attributes["cpu"], 1, 1<<20); ok {
			t.Resources.CPU = v
		}
		if v, ok := d.Int(rc.Attributes["memory"], minMemoryMB, 1<<24); ok {
			t.Resources.MemoryMB = v
		}
	}

	trb := decodeRestart(d, d.AtMostOne(blocks["restart"]))
	t.Restart = trb.over(*g.Restart)
	if trb != nil {
		checkRestart(d, t.Restart, trb)
	}

	if lb := d.AtMostOne(blocks["logs"]); lb != nil {
		lc := d.Content(lb.Body, logsSchema)
		if v, ok := d.Int(lc.Attributes["max_files"], 1, 1000); ok {
			t.Logs.MaxFiles = v
		}
		if v, ok := d.Int(lc.Attributes["max_file_size"], 1, 1<<16); ok {
			t.Logs.MaxFileSizeMB = v
		}
		if v, ok := d.Bool(lc.Attributes["disabled"]); ok {
			t.Logs.Disabled = v
		}
	}

	var pluginRange hcl.Range
	if pb := d.AtMostOne(blocks["csi_plugin"]); pb != nil {
		t.CSIPluginConfig = decodeCSIPlugin(d, pb)
		pluginRange = pb.DefRange
	}

	dests := map[string]bool{}
	for _, vb := range blocks["volume_mount"] {
		if vm := decodeVolumeMount(d, g, vb, dests); vm != nil {
			t.VolumeMounts = append(t.VolumeMounts, vm)
		}
	}
	return t, pluginRange
}

func decodeTaskConfig(d *hclstrict.Decoder, driver string, b *hcl.Block) *TaskConfig {
	c := d.Content(b.Body, configSchema)
	tc := &TaskConfig{}
	if attr := c.Attributes["command"]; attr == nil {
		d.Errorf(b.DefRange, "Missing command", "The config block needs `command`, the program to run.")
	} else if s, ok := d.String(attr, runtimeScope); ok {
		if strings.TrimSpace(s) == "" {
			d.Errorf(attr.Expr.Range(), "Invalid command", "The command must not be empty.")
		}
		tc.Command = s
	}
	tc.Args, _ = d.StringList(c.Attributes["args"], runtimeScope)
	tc.WorkDir, _ = d.String(c.Attributes["work_dir"], runtimeScope)

	if attr := c.Attributes["checksum"]; attr != nil {
		// Nomad's raw_exec refuses unknown config keys, so a raw_exec
		// task with checksum would not be a valid Nomad job.
		if driver != DriverGoPlugin {
			d.Errorf(attr.NameRange, "Unsupported argument",
				"checksum is only supported by the go_plugin driver; Nomad's raw_exec has no such key.")
		} else if s, ok := d.String(attr, nil); ok {
			sum, valid := normalizeChecksum(s)
			if !valid {
				d.Errorf(attr.Expr.Range(), "Invalid checksum",
					"checksum must be \"sha256:\" followed by 64 hex digits, got %q.", s)
			}
			tc.Checksum = sum
		}
	}
	return tc
}

// normalizeChecksum lowercases the hex so that comparisons with a computed
// digest are plain string equality.
func normalizeChecksum(s string) (string, bool) {
	hexPart, ok := strings.CutPrefix(s, checksumPrefixSHA256)
	if !ok || len(hexPart) != 64 {
		return s, false
	}
	if _, err := hex.DecodeString(hexPart); err != nil {
		return s, false
	}
	return checksumPrefixSHA256 + strings.ToLower(hexPart), true
}

func decodeVolumeMount(d *hclstrict.Decoder, g *TaskGroup, b *hcl.Block, dests map[string]bool) *VolumeMount {
	c := d.Content(b.Body, volumeMountSchema)
	vm := &VolumeMount{}
	if attr := c.Attributes["volume"]; attr == nil {
		d.Errorf(b.DefRange, "Missing volume", "volume_mount needs `volume`, the alias of a group `volume` block.")
	} else if s, ok := d.String(attr, nil); ok {
		if _, declared := g.Volumes[s]; !declared {
			d.Errorf(attr.Expr.Range(), "Undeclared volume", "Group %q declares no volume %q.", g.Name, s)
		}
		vm.Volume = s
	}
	if attr := c.Attributes["destination"]; attr == nil {
		d.Errorf(b.DefRange, "Missing destination", "volume_mount needs `destination`, where the volume appears in the task.")
	} else if s, ok := d.String(attr, nil); ok {
		switch {
		case s == "":
			d.Errorf(attr.Expr.Range(), "Invalid destination", "The destination must not be empty.")
		case dests[s]:
			d.Errorf(attr.Expr.Range(), "Duplicate destination", "Another volume_mount of this task already uses %q.", s)
		}
		dests[s] = true
		vm.Destination = s
	}
	vm.ReadOnly, _ = d.Bool(c.Attributes["read_only"])
	return vm
}
