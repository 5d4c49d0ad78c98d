// Command pluginhost is the agent and its CLI.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "pluginhost: the agent is not built yet (see the agent issue)")
	os.Exit(1)
}
