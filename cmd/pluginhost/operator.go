package main

import (
	"strings"

	"github.com/hashicorp/cli"
)

// OperatorCommand groups the operator subcommands; alone it prints their
// list.
type OperatorCommand struct{ *Meta }

func (c *OperatorCommand) Synopsis() string { return "Inspect the agent's internals" }
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
