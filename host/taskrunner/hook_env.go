package taskrunner

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/nsexec"
)

// DefaultPath is the PATH a task gets unless its env sets one: the agent's
// own PATH never leaks into tasks (bare command names still fall back to it
// for resolution, see driver.ResolveCommand).
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ResolveCommand is the program a raw_exec or go_plugin task's command
// names on this machine, as its launch will find it with the default task
// PATH (driver.ResolveCommand): for the checks at submission.
func ResolveCommand(command string) (string, error) {
	return driver.ResolveCommand(command, []string{"PATH=" + DefaultPath}, "")
}

// envHook builds the task's environment from nothing: PATH, HOME, the
// NOMAD_* variables, then the job's env with ${...} interpolated.
type envHook struct{ cfg *Config }

func (h *envHook) Name() string { return "env" }

func (h *envHook) Prestart(_ context.Context, req *HookRequest) error {
	allocDir, taskDir, secretsDir := req.SharedDir, req.LocalDir, req.SecretsDir
	if req.Task.Driver == jobspec.DriverExec {
		// The task's own root: the paths it sees, as Nomad sets them for
		// chrooted drivers.
		allocDir, taskDir, secretsDir = nsexec.AllocDir, nsexec.LocalDir, nsexec.SecretsDir
	}
	// HOME is the task's user's home, or the task's own directory: the
	// agent's HOME is not the task's business.
	home := taskDir
	if req.User != nil && req.User.Home != "" {
		home = req.User.Home
	}
	env := map[string]string{
		"PATH":              DefaultPath,
		"HOME":              home,
		"NOMAD_ALLOC_ID":    req.AllocID,
		"NOMAD_ALLOC_DIR":   allocDir,
		"NOMAD_TASK_DIR":    taskDir,
		"NOMAD_SECRETS_DIR": secretsDir,
		"NOMAD_ALLOC_INDEX": strconv.Itoa(req.AllocIndex),
		"NOMAD_ALLOC_NAME":  allocName(req.Job, req.Group, req.AllocIndex),
		"NOMAD_JOB_ID":      req.Job.ID,
		"NOMAD_JOB_NAME":    req.Job.Name,
		"NOMAD_GROUP_NAME":  req.Group.Name,
		"NOMAD_TASK_NAME":   req.Task.Name,
		"NOMAD_DC":          h.cfg.Datacenter,
	}
	meta := map[string]string{}
	maps.Copy(meta, req.Job.Meta)
	maps.Copy(meta, req.Group.Meta)
	maps.Copy(meta, req.Task.Meta)
	for k, v := range meta {
		env[jobspec.MetaVarPrefix+strings.ToUpper(k)] = v
		env[jobspec.MetaVarPrefix+k] = v
	}
	vars := interpolationVars(h.cfg, env)
	// Sorted, so that a result never depends on map order.
	for _, k := range slices.Sorted(maps.Keys(req.Task.Env)) {
		env[k] = jobspec.Interpolate(req.Task.Env[k], vars)
	}
	req.Env = env
	return nil
}

func allocName(job *jobspec.Job, g *jobspec.TaskGroup, idx int) string {
	return job.ID + "." + g.Name + "[" + strconv.Itoa(idx) + "]"
}

// interpolationVars is what ${...} in args may name: the final env (after
// every prestart hook, so CSI_ENDPOINT is there) and node attributes.
func interpolationVars(cfg *Config, env map[string]string) map[string]string {
	vars := maps.Clone(env)
	vars[jobspec.VarNodeName] = cfg.NodeName
	vars[jobspec.VarNodeID] = cfg.NodeID
	vars[jobspec.VarNodeDC] = cfg.Datacenter
	return vars
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
