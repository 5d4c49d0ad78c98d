// Package jobspec parses pluginhost job files: a strict subset of Nomad's
// HCL2 jobspec, so that every file pluginhost accepts is also a valid Nomad
// job with the same meaning (the one documented exception is `checksum`,
// below).
//
// # Pipeline
//
// Parse runs hclsyntax, then decodes the body by hand against one
// hcl.BodySchema per block (see hclstrict for why not gohcl), applies
// defaults, and validates. Nothing stops at the first problem: all
// diagnostics of a file are collected and returned together as one
// *hclstrict.DiagnosticsError whose text quotes each offending line as
// file:line:col with the range underlined. The only exception is a syntax
// error, after which decoding is skipped because the partial tree would
// produce misleading follow-on errors.
//
// Limits come first, each refused with one located error before the work
// it bounds: hclstrict.CheckSource refuses a file over MaxFileSize, nested
// too deep or chaining too many operators before hcl parses it (hcl
// recurses without a bound of its own), the decoder refuses a job of more
// than MaxGroups groups or a group of more than MaxTasksPerGroup tasks
// before decoding them, and a job whose groups ask for more than MaxAllocs
// allocations or MaxTasks tasks before decoding its tasks. Validate holds
// JSON jobs to the same counts.
//
// Decoding and validating are separate. The decoder only knows about the
// file's shape (syntax, unknown keys, value types, repeated blocks, missing
// required keys) and records where each Job field was written. Every other
// rule lives in Validate, which names problems by Go field path
// ("TaskGroups[0].Tasks[1].Name"); Parse reports each at the range recorded
// for that path, or for its closest enclosing field when the file did not
// write it. A field the decoder already reported is not validated again.
//
// # JSON jobs
//
// A job submitted through the HTTP API as JSON is this package's Job
// structure, encoded with Go's field names. It goes through Canonicalize,
// then Validate: the same rules, in the same words, as a job file, with
// problems naming the field instead of a line. Canonicalize reads these zero
// values as "not given" and fills in the parser's default:
//
//	Type ""                        "service"
//	Name ""                        the ID
//	Datacenters null               ["*"] (an empty list is refused)
//	Meta, Env, Volumes null        empty
//	TaskGroup.Restart null         the job type's default policy
//	Task.Restart null              the group's policy
//	Task.KillTimeout 0             5s (a JSON job cannot ask for zero)
//	Task.KillSignal ""             "SIGINT"
//	Task.Logs, Task.Resources null the defaults below
//	VolumeRequest.Name ""          its alias (the Volumes key)
//	CSIPluginConfig.MountDir ""    "/csi"; StagePublishBaseDir "" "/local/csi"
//	Config.PIDMode, IPCMode "" (exec only)  "private"
//	CSIPluginConfig.HealthTimeout 0  30s
//
// Everything else is taken as written: Count 0 means no allocation, as in a
// job file, and a given Restart, Logs or Resources object is taken whole
// (its zero fields are zero, not defaults). Durations are nanoseconds.
//
// # Invariants for consumers
//
//   - A returned *Job is fully validated and every field holds its final
//     value: defaults are applied here and only here, so the task runner,
//     drivers and the CSI hook never re-derive them. Maps (Meta, Env, Volumes)
//     are non-nil.
//   - Task.Restart is the merged policy: Nomad's default for the job type,
//     overlaid with the group's restart block, overlaid key by key with the
//     task's. TaskGroup.Restart is the group-level merge.
//   - Names (job ID, group, task, volume alias) never contain '/',
//     whitespace, control characters, and are never "." or "..": they are
//     safe as path elements.
//   - CSI plugin IDs match [A-Za-z0-9][A-Za-z0-9._-]{0,127}; one allocation
//     serves a plugin ID at most once per role (node, controller; monolith
//     counts as both).
//
// # Defaults (Nomad's, as chosen here)
//
//	type                        "service"
//	datacenters                 ["*"]         (Nomad 1.6+)
//	group.count                 1             (0..1000; system/sysbatch 0..1)
//	restart, service & system   attempts 2, interval 30m, delay 15s, mode "fail"
//	restart, batch & sysbatch   attempts 3, interval 24h, delay 15s, mode "fail"
//	kill_timeout                5s
//	kill_signal                 "SIGINT"
//	logs                        max_files 10, max_file_size 10 (MB)
//	resources                   cpu 100 (MHz), memory 300 (MB), memory_max unset
//	                            (memory is then the hard limit too)
//	user                        "" (exec: a dynamic uid of the agent's, else
//	                            "nobody"; raw_exec, go_plugin: the agent's user)
//	exec pid_mode, ipc_mode     "private"
//	csi_plugin.mount_dir        "/csi"
//	csi_plugin.stage_publish_base_dir  "/local/csi" (must not be mount_dir or
//	                            under it, as in Nomad)
//	csi_plugin.health_timeout   30s
//
// Restart policies follow Nomad's consistency rules: interval >= 5s, zero
// attempts only with mode "fail", attempts*delay <= interval.
//
// # Where pluginhost is stricter than Nomad
//
// Refusing is always safe for the "also valid in Nomad" promise, so the parser
// refuses what would silently misbehave: volume `type` must be written (Nomad
// defaults to "host", pluginhost only has "csi"); CSI volumes need
// access_mode and attachment_mode; kill_signal must be a signal that can end
// a process; durations must be strings; unknown `${...}` names are errors
// (Nomad keeps them as text); HCL functions, `variable` and `locals` are not
// supported; `cores` is refused (no whole cores to reserve on a shared
// machine) and so is memory_max = -1 (no limit).
//
// Checks that need the host (does the task's user exist, is its uid or
// gid denied, may exec grant its cap_add) are not Validate's, whose answer
// must not depend on the machine: see CheckHost.
//
// # Where pluginhost goes further than Nomad
//
// A raw_exec or go_plugin task may have a volume_mount: pluginhost binds
// the volume into a mount namespace of the task's own. Nomad refuses such a
// job ("no task supports CSI"), so NomadWarnings says so for `job validate`
// and `job run`; on Nomad the task needs driver "exec".
//
// # The checksum exception
//
// `config { checksum = "sha256:<64 hex>" }` is accepted under the go_plugin
// driver only, and is stored lowercased. Nomad's raw_exec rejects unknown
// config keys, so a raw_exec task with checksum is refused here too, as are
// exec's pid_mode, ipc_mode, cap_add and cap_drop on raw_exec and go_plugin
// (Nomad's raw_exec task config spec has none of them). Moving
// a go_plugin job to Nomad already means changing its driver to raw_exec;
// drop checksum in the same edit.
//
// # Runtime variables
//
// `${NOMAD_ALLOC_ID}`, `${CSI_ENDPOINT}`, `${node.unique.name}` and the other
// names of RuntimeVariables (plus `${NOMAD_META_<key>}`) only have values
// once an allocation exists. The parser evaluates each reference to its own
// text, so the parsed job still holds "${NOMAD_ALLOC_ID}", and the task runner
// expands it per allocation with Interpolate. References are allowed only
// where the task runner interpolates: config.command, config.args,
// config.work_dir and env values; anywhere else hcl reports "Variables not
// allowed". An unknown name is an error at its location. `$${X}` is HCL's
// escape for a literal "${X}", which Interpolate will then expand if X is
// known, exactly as Nomad does.
package jobspec
