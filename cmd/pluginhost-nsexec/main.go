// Command pluginhost-nsexec starts a task in a mount namespace holding its
// volumes (package nsexec). The agent runs it as the task's first
// program; it makes the bind mounts and execs the task in place. It links
// only the standard library and x/sys, so it adds about as little to a
// launch as a fork/exec; `pluginhost nsexec` is the same code, used when
// this binary is not next to pluginhost.
package main

import (
	"os"

	"github.com/pluginhost/pluginhost/host/nsexec"
)

func main() { os.Exit(nsexec.Main(os.Args[1:])) }
