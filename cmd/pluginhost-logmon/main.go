// Command pluginhost-logmon is the agent's log shipper as a binary of its
// own. The agent starts one per task launch, on the launch's path; this
// binary links only the standard library and package logmon, so it starts
// in a fraction of the time and CPU of `pluginhost logmon`, which has to
// map and initialise the whole agent (gRPC, protobuf, HCL) first. The
// agent uses it when it sits next to the pluginhost binary and falls back
// to `pluginhost logmon` otherwise; both run the same logmon.Main.
package main

import (
	"os"

	"github.com/pluginhost/pluginhost/host/logmon"
)

func main() { os.Exit(logmon.Main(os.Args[1:])) }
