package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/pluginhost/pluginhost/host/volumespec"
)

// VolumeInitCommand writes an example volume specification.
type VolumeInitCommand struct{ *Meta }

func (c *VolumeInitCommand) Synopsis() string { return "Write an example volume specification file" }
func (c *VolumeInitCommand) Help() string {
	return helpText(`
Usage: pluginhost volume init [-json] [FILE]

  Write a commented example volume specification to FILE (volume.hcl, or
  volume.json with -json), as 'nomad volume init' does. An existing file is
  never overwritten.

Options:

  -json
    Write the JSON form.
`)
}

func (c *VolumeInitCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("volume init", false, false)
	fs.BoolVar(&asJSON, "json", false, "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() > 1 {
		return c.usageError("volume init", "This command takes at most one argument: the file to write")
	}
	path, text := "volume.hcl", volumespec.ExampleHCL
	if asJSON {
		path, text = "volume.json", volumespec.ExampleJSON
	}
	if fs.NArg() == 1 {
		path = fs.Arg(0)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		c.Ui.Error(fmt.Sprintf("%s already exists; not overwriting it", path))
		return 1
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error writing %s: %v", path, err))
		return 1
	}
	if _, err := f.WriteString(text); err != nil {
		_ = f.Close()
		c.Ui.Error(fmt.Sprintf("Error writing %s: %v", path, err))
		return 1
	}
	if err := f.Close(); err != nil {
		c.Ui.Error(fmt.Sprintf("Error writing %s: %v", path, err))
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Example volume specification written to %s", path))
	return 0
}
