// Command logmonbin runs logmon.Main, standing in for `pluginhost logmon`
// in this module's tests so that they do not depend on the CLI.
package main

import (
	"os"

	"github.com/pluginhost/pluginhost/host/logmon"
)

func main() { os.Exit(logmon.Main(os.Args[1:])) }
