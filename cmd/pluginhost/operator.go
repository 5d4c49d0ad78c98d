package main

import (
	"fmt"
	"strings"

	"github.com/hashicorp/cli"

	"github.com/pluginhost/pluginhost/api"
)

// OperatorCommand groups the operator subcommands; alone it prints their
// list.
type OperatorCommand struct{ *Meta }

func (c *OperatorCommand) Synopsis() string {
	return "Inspect the agent's internals and manage its tokens"
}
func (c *OperatorCommand) Help() string {
	return helpText(`
Usage: pluginhost operator <subcommand> [options]

  Look at the agent itself rather than at what it runs.
`)
}
func (c *OperatorCommand) Run([]string) int { return cli.RunResultHelp }

// OperatorMetricsCommand prints the agent's metrics, as `nomad operator
// metrics` does.
type OperatorMetricsCommand struct{ *Meta }

func (c *OperatorMetricsCommand) Synopsis() string { return "Print the agent's metrics" }

func (c *OperatorMetricsCommand) Help() string {
	return helpText(`
Usage: pluginhost operator metrics [-format prometheus]

  Print the agent's metrics (GET /v1/metrics): indented JSON by default,
  the Prometheus text format with -format=prometheus. README.md, "Metrics",
  lists every metric.

Options:

  -format=<format>
    "prometheus" for the Prometheus text format; left out, JSON.
` + helpAgentOptions)
}

func (c *OperatorMetricsCommand) Run(args []string) int {
	var format string
	fs := c.flagSet("operator metrics", true, false)
	fs.StringVar(&format, "format", "", "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 0 {
		return c.usageError("operator metrics", "This command takes no arguments")
	}
	if format != "" && format != "prometheus" {
		return c.usageError("operator metrics", `-format must be "prometheus" or left out (JSON), got "`+format+`"`)
	}
	client, err := c.client()
	if err != nil {
		return c.fail("connecting to the agent", err)
	}
	defer client.Close()
	if format == "prometheus" {
		var b strings.Builder
		if err := client.MetricsPrometheus(c.Ctx, &b); err != nil {
			return c.fail("reading metrics", err)
		}
		c.Ui.Output(strings.TrimSuffix(b.String(), "\n"))
		return 0
	}
	m, err := client.Metrics(c.Ctx)
	if err != nil {
		return c.fail("reading metrics", err)
	}
	return c.outputJSON(m)
}

// OperatorTokenCommand shows or rotates the agent's API tokens.
type OperatorTokenCommand struct{ *Meta }

func (c *OperatorTokenCommand) Synopsis() string { return "Show or rotate the agent's API tokens" }

func (c *OperatorTokenCommand) Help() string {
	return helpText(`
Usage: pluginhost operator token [-rotate=management|read] [-json]

  Show the agent's two API tokens (GET /v1/acl/tokens): the management
  token, which may do everything, and the read token, which may only GET
  (for Prometheus and dashboards). Both are secrets: this needs the
  management token, or the agent's unix socket.

  With -rotate, replace one of them with a new random token first. The old
  token stops working at once, also for requests still streaming with it;
  no restart is needed. The agent rewrites the copy of the management token
  it keeps for its own user, so that user's CLI follows by itself. Tokens
  set in the agent's config (acl block) are changed there instead.

Options:

  -rotate=<type>
    "management" or "read": the token to replace.

  -json
    Print the API's JSON instead of the table.
` + helpAgentOptions)
}

func (c *OperatorTokenCommand) Run(args []string) int {
	var rotate string
	fs := c.flagSet("operator token", true, false)
	fs.StringVar(&rotate, "rotate", "", "")
	fs.BoolVar(&c.json, "json", false, "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 0 {
		return c.usageError("operator token", "This command takes no arguments")
	}
	if rotate != "" && rotate != api.TokenTypeManagement && rotate != api.TokenTypeRead {
		return c.usageError("operator token", `-rotate must be "management" or "read", got "`+rotate+`"`)
	}
	client, err := c.client()
	if err != nil {
		return c.fail("connecting to the agent", err)
	}
	defer client.Close()
	var toks *api.ACLTokens
	if rotate != "" {
		toks, err = client.RotateToken(c.Ctx, rotate)
		if err != nil {
			return c.fail("rotating the "+rotate+" token", err)
		}
	} else if toks, err = client.Tokens(c.Ctx); err != nil {
		return c.fail("reading the tokens", err)
	}
	if c.json {
		return c.outputJSON(toks)
	}
	rows := []string{"Type|Source|Secret ID"}
	for _, t := range toks.Tokens {
		rows = append(rows, t.Type+"|"+t.Source+"|"+t.SecretID)
	}
	c.Ui.Output(formatList(rows))
	if rotate != "" {
		c.Ui.Output(fmt.Sprintf("\nThe %s token was rotated; the old one no longer works.", rotate))
	}
	return 0
}
