package main

import (
	"context"
	"time"

	"github.com/hashicorp/cli"
	"github.com/posener/complete"

	"github.com/pluginhost/pluginhost/api"
)

// Shell completion (`pluginhost -autocomplete-install`), as Nomad's CLI
// has it: commands and subcommands come from the command table; this file
// adds each command's flags and the IDs its arguments take, asked of the
// agent at $PLUGINHOST_ADDR (or the default address) when the user presses
// tab.

// completion is what one command completes.
type completion struct {
	args  complete.Predictor
	flags []string
}

// predictTimeout bounds one query of the agent: a shell waits for it.
const predictTimeout = time.Second

// predictIDs completes from what list returns, asked of the agent.
func (m *Meta) predictIDs(list func(ctx context.Context, c *api.Client) []string) complete.Predictor {
	return complete.PredictFunc(func(complete.Args) []string {
		c, err := m.client()
		if err != nil {
			return nil
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), predictTimeout)
		defer cancel()
		return list(ctx, c)
	})
}

func (m *Meta) completions() map[string]completion {
	agent := []string{"-address", "-token"}
	read := append(agent, "-json", "-verbose")
	jobs := m.predictIDs(func(ctx context.Context, c *api.Client) []string {
		js, err := c.Jobs(ctx)
		if err != nil {
			return nil
		}
		out := make([]string, len(js))
		for i, j := range js {
			out[i] = j.ID
		}
		return out
	})
	allocs := m.predictIDs(func(ctx context.Context, c *api.Client) []string {
		js, err := c.Jobs(ctx)
		if err != nil {
			return nil
		}
		var out []string
		for _, j := range js {
			as, err := c.JobAllocations(ctx, j.ID)
			if err != nil {
				continue
			}
			for _, a := range as {
				out = append(out, a.ID)
			}
		}
		return out
	})
	plugins := m.predictIDs(func(ctx context.Context, c *api.Client) []string {
		ps, err := c.Plugins(ctx)
		if err != nil {
			return nil
		}
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p.ID
		}
		return out
	})
	volumes := m.predictIDs(func(ctx context.Context, c *api.Client) []string {
		vs, err := c.Volumes(ctx, "")
		if err != nil {
			return nil
		}
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = v.ID
		}
		return out
	})
	specs := complete.PredictOr(complete.PredictFiles("*.hcl"), complete.PredictFiles("*.json"))
	return map[string]completion{
		"job run":                {complete.PredictFiles("*.hcl"), append(agent, "-detach")},
		"job validate":           {complete.PredictFiles("*.hcl"), nil},
		"job status":             {jobs, read},
		"job stop":               {jobs, append(agent, "-purge")},
		"job history":            {jobs, append(read, "-version")},
		"job revert":             {jobs, append(agent, "-detach")},
		"alloc status":           {allocs, read},
		"alloc logs":             {allocs, append(agent, "-stderr", "-f")},
		"plugin status":          {plugins, read},
		"plugin init":            {complete.PredictNothing, []string{"-module", "-dir"}},
		"volume init":            {complete.PredictNothing, []string{"-json"}},
		"volume create":          {specs, append(agent, "-detach")},
		"volume register":        {specs, append(agent, "-detach")},
		"volume delete":          {volumes, append(agent, "-detach")},
		"volume deregister":      {volumes, append(agent, "-force")},
		"volume detach":          {volumes, agent},
		"volume status":          {volumes, append(read, "-plugin")},
		"volume snapshot create": {volumes, read},
		"volume snapshot list":   {complete.PredictNothing, append(read, "-plugin")},
		"volume snapshot delete": {plugins, agent},
		"events":                 {complete.PredictNothing, append(read, "-topic", "-index")},
		"operator metrics":       {complete.PredictNothing, append(agent, "-format")},
		"operator token":         {complete.PredictNothing, append(agent, "-json", "-rotate")},
	}
}

// autocompleting gives a command its completion.
type autocompleting struct {
	cli.Command
	c completion
}

func (a autocompleting) AutocompleteArgs() complete.Predictor { return a.c.args }

func (a autocompleting) AutocompleteFlags() complete.Flags {
	f := complete.Flags{}
	for _, name := range a.c.flags {
		f[name] = complete.PredictAnything
	}
	return f
}

// withCompletion wraps the table's commands that complete more than their
// subcommands.
func (m *Meta) withCompletion(cmds map[string]cli.CommandFactory) map[string]cli.CommandFactory {
	for name, c := range m.completions() {
		factory, ok := cmds[name]
		if !ok {
			continue
		}
		cmds[name] = func() (cli.Command, error) {
			cmd, err := factory()
			if err != nil {
				return nil, err
			}
			return autocompleting{Command: cmd, c: c}, nil
		}
	}
	return cmds
}
