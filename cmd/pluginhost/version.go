package main

// VersionCommand prints the CLI's version.
type VersionCommand struct {
	*Meta
}

func (c *VersionCommand) Synopsis() string { return "Print the pluginhost version" }

func (c *VersionCommand) Help() string {
	return helpText(`
Usage: pluginhost version

  Print the version of this pluginhost binary. The running agent's version
  is in 'curl --unix-socket SOCK http://x/v1/agent/self'.
`)
}

func (c *VersionCommand) Run(args []string) int {
	c.Ui.Output("pluginhost v" + version)
	return 0
}
