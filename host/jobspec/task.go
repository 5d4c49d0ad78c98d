package jobspec

import (
	"encoding/hex"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// Task defaults, as in Nomad.
const (
	DefaultKillTimeout   = 5 * time.Second
	DefaultKillSignal    = "SIGINT"
	DefaultLogMaxFiles   = 10
	DefaultLogMaxFileMB  = 10
	DefaultCPU           = 100
	DefaultMemoryMB      = 300
	checksumPrefixSHA256 = "sha256:"
)

var taskSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "driver"}, {Name: "user"}, {Name: "kill_timeout"}, {Name: "kill_signal"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "config"}, {Type: "env"}, {Type: "meta"}, {Type: "resources"}, {Type: "restart"},
		{Type: "logs"}, {Type: "csi_plugin"}, {Type: "volume_mount"},
	},
}

var configSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "command"}, {Name: "args"}, {Name: "work_dir"}, {Name: "checksum"},
		// exec only (see exec.go); Validate refuses them elsewhere.
		{Name: "pid_mode"}, {Name: "ipc_mode"}, {Name: "cap_add"}, {Name: "cap_drop"},
	},
	// go_plugin only (see goplugin.go); Validate refuses them elsewhere.
	Blocks: []hcl.BlockHeaderSchema{{Type: "handshake"}, {Type: "plugin"}},
}

var resourcesSchema = &hcl.BodySchema{
	// cores is in the schema only to be refused with a reason.
	Attributes: []hcl.AttributeSchema{{Name: "cpu"}, {Name: "memory"}, {Name: "memory_max"}, {Name: "cores"}},
}

var logsSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "max_files"}, {Name: "max_file_size"}, {Name: "disabled"}},
}

var volumeMountSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "volume"}, {Name: "destination"}, {Name: "read_only"}},
}

// decodeTask decodes one task of g, whose restart policy is already merged;
// f is the task's field path.
func decodeTask(d *decoder, g *TaskGroup, block *hcl.Block, f string) *Task {
	t := &Task{
		Name:        block.Labels[0],
		KillTimeout: DefaultKillTimeout,
		KillSignal:  DefaultKillSignal,
		Logs:        &LogConfig{MaxFiles: DefaultLogMaxFiles, MaxFileSizeMB: DefaultLogMaxFileMB},
		Resources:   &Resources{CPU: DefaultCPU, MemoryMB: DefaultMemoryMB},
	}
	d.At(f, block.DefRange)
	d.At(f+".Name", labelRange(block))
	c := d.Content(block.Body, taskSchema)

	if attr := c.Attributes["driver"]; d.Required(f+".Driver", attr, block.DefRange, "Missing driver",
		"Task %q needs `driver = \"raw_exec\"`, `driver = \"exec\"` or `driver = \"go_plugin\"`.", t.Name) {
		t.Driver, _ = d.FieldString(f+".Driver", attr, nil)
	}
	t.User, _ = d.FieldString(f+".User", c.Attributes["user"], nil)
	if v, ok := d.FieldDuration(f+".KillTimeout", c.Attributes["kill_timeout"]); ok {
		t.KillTimeout = v
	}
	if s, ok := d.FieldString(f+".KillSignal", c.Attributes["kill_signal"], nil); ok {
		t.KillSignal = s
	}

	blocks := map[string]hcl.Blocks{}
	for _, b := range c.Blocks {
		blocks[b.Type] = append(blocks[b.Type], b)
	}

	// A missing config block is left nil for Validate to report.
	if cb := d.AtMostOne(blocks["config"]); cb != nil {
		t.Config = decodeTaskConfig(d, cb, f+".Config")
	}
	t.Env = d.StringMap(d.AtMostOne(blocks["env"]), runtimeScope)
	t.Meta = d.StringMap(d.AtMostOne(blocks["meta"]), nil)

	if rb := d.AtMostOne(blocks["resources"]); rb != nil {
		d.At(f+".Resources", rb.DefRange)
		rc := d.Content(rb.Body, resourcesSchema)
		if v, ok := d.FieldWhole(f+".Resources.CPU", rc.Attributes["cpu"], minCPU, maxCPU); ok {
			t.Resources.CPU = v
		}
		if v, ok := d.FieldWhole(f+".Resources.MemoryMB", rc.Attributes["memory"], minMemoryMB, maxMemoryMB); ok {
			t.Resources.MemoryMB = v
		}
		// -1 is Nomad's "no limit"; Validate says why it is refused.
		if v, ok := d.FieldWhole(f+".Resources.MemoryMaxMB", rc.Attributes["memory_max"], -1, maxMemoryMB); ok {
			t.Resources.MemoryMaxMB = v
		}
		if attr := rc.Attributes["cores"]; attr != nil {
			// Nomad reserves whole cores exclusively to a task (and
			// refuses cores with cpu: "Task can only ask for 'cpu' or
			// 'cores' resource, not both."); one machine shared with its
			// user has no cores to set aside.
			d.Errorf(attr.NameRange, "Unsupported cores",
				"cores: pluginhost does not reserve whole cores; use cpu (MHz) instead.")
		}
	}

	trb := decodeRestart(d, d.AtMostOne(blocks["restart"]), f+".Restart")
	t.Restart = trb.over(*g.Restart)

	if lb := d.AtMostOne(blocks["logs"]); lb != nil {
		d.At(f+".Logs", lb.DefRange)
		lc := d.Content(lb.Body, logsSchema)
		if v, ok := d.FieldWhole(f+".Logs.MaxFiles", lc.Attributes["max_files"], minLogFiles, maxLogFiles); ok {
			t.Logs.MaxFiles = v
		}
		if v, ok := d.FieldWhole(f+".Logs.MaxFileSizeMB", lc.Attributes["max_file_size"], minLogFileMB, maxLogFileMB); ok {
			t.Logs.MaxFileSizeMB = v
		}
		if v, ok := d.FieldBool(f+".Logs.Disabled", lc.Attributes["disabled"]); ok {
			t.Logs.Disabled = v
		}
	}

	if pb := d.AtMostOne(blocks["csi_plugin"]); pb != nil {
		t.CSIPluginConfig = decodeCSIPlugin(d, pb, f+".CSIPluginConfig")
	}

	for _, vb := range blocks["volume_mount"] {
		t.VolumeMounts = append(t.VolumeMounts, decodeVolumeMount(d, vb, fieldIndex(f+".VolumeMounts", len(t.VolumeMounts))))
	}
	if t.Driver == DriverExec {
		// Nomad's exec defaults: private PID and IPC namespaces (the
		// driver's default_pid_mode / default_ipc_mode). An empty user
		// stays empty: who such a task runs as is the agent's choice
		// (a dynamic uid, else nobody), as it is the driver's on Nomad.
		if t.Config != nil {
			if t.Config.PIDMode == "" {
				t.Config.PIDMode = IsolationModePrivate
			}
			if t.Config.IPCMode == "" {
				t.Config.IPCMode = IsolationModePrivate
			}
		}
	}
	return t
}

func decodeTaskConfig(d *decoder, b *hcl.Block, f string) *TaskConfig {
	d.At(f, b.DefRange)
	c := d.Content(b.Body, configSchema)
	tc := &TaskConfig{}
	if attr := c.Attributes["command"]; d.Required(f+".Command", attr, b.DefRange, "Missing command",
		"The config block needs `command`, the program to run.") {
		tc.Command, _ = d.FieldString(f+".Command", attr, runtimeScope)
	}
	tc.Args, _ = d.FieldStringList(f+".Args", c.Attributes["args"], runtimeScope)
	tc.WorkDir, _ = d.FieldString(f+".WorkDir", c.Attributes["work_dir"], runtimeScope)
	tc.PIDMode, _ = d.FieldString(f+".PIDMode", c.Attributes["pid_mode"], nil)
	tc.IPCMode, _ = d.FieldString(f+".IPCMode", c.Attributes["ipc_mode"], nil)
	tc.CapAdd, _ = d.FieldStringList(f+".CapAdd", c.Attributes["cap_add"], nil)
	tc.CapDrop, _ = d.FieldStringList(f+".CapDrop", c.Attributes["cap_drop"], nil)
	if s, ok := d.FieldString(f+".Checksum", c.Attributes["checksum"], nil); ok {
		// Stored lowercased so that comparing with a computed digest is
		// plain string equality; Validate refuses what does not normalize.
		tc.Checksum, _ = normalizeChecksum(s)
	}
	blocks := map[string]hcl.Blocks{}
	for _, blk := range c.Blocks {
		blocks[blk.Type] = append(blocks[blk.Type], blk)
	}
	if hb := d.AtMostOne(blocks["handshake"]); hb != nil {
		tc.Handshake = decodeHandshake(d, hb, f+".Handshake")
	}
	if pb := d.AtMostOne(blocks["plugin"]); pb != nil {
		tc.Plugin = decodeProvides(d, pb, f+".Plugin")
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

func decodeVolumeMount(d *decoder, b *hcl.Block, f string) *VolumeMount {
	d.At(f, b.DefRange)
	c := d.Content(b.Body, volumeMountSchema)
	vm := &VolumeMount{}
	if attr := c.Attributes["volume"]; d.Required(f+".Volume", attr, b.DefRange, "Missing volume",
		"volume_mount needs `volume`, the alias of a group `volume` block.") {
		vm.Volume, _ = d.FieldString(f+".Volume", attr, nil)
	}
	if attr := c.Attributes["destination"]; d.Required(f+".Destination", attr, b.DefRange, "Missing destination",
		"volume_mount needs `destination`, where the volume appears in the task.") {
		vm.Destination, _ = d.FieldString(f+".Destination", attr, nil)
	}
	vm.ReadOnly, _ = d.FieldBool(f+".ReadOnly", c.Attributes["read_only"])
	return vm
}
