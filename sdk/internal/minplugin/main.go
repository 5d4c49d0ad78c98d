// Command minplugin is the sdk side of the benchmarks: the same Identity
// server as bareplugin, and nothing else, served with sdk.Main, so that the
// comparison measures the sdk and not the test plugin's extra services.
package main

import (
	"github.com/pluginhost/pluginhost/sdk"
	"github.com/pluginhost/pluginhost/sdk/internal/testcsi"
	"github.com/pluginhost/pluginhost/sdk/sdkcsi"
)

func main() {
	sdk.Main(sdk.Config{Name: "minplugin", CSI: sdkcsi.Services{Identity: &testcsi.Identity{}}})
}
