// Command testhost is a minimal pluginhost stand-in for the survival test: it
// launches a plugin through go-plugin in its own session (as the agent does),
// prints one JSON line describing it, and then waits to be killed.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	hclog "github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"

	"github.com/pluginhost/pluginhost/sdk"
)

// Launched is what testhost prints once the plugin is up.
type Launched struct {
	Pid     int    `json:"pid"`
	Socket  string `json:"socket"`
	Version int    `json:"version"`
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: testhost PLUGIN SOCKET_DIR LOG_FILE")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1])
	cmd.Env = append(os.Environ(), sdk.EnvLogFile+"="+os.Args[3], sdk.EnvLogLevel+"=debug",
		plugin.EnvUnixSocketDir+"="+os.Args[2])
	cmd.SysProcAttr = ownSession()
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake(),
		VersionedPlugins: sdk.HostPlugins(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		SkipHostEnv:      true,
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "testhost", Output: os.Stderr, Level: hclog.Debug}),
	})
	if _, err := client.Client(); err != nil {
		fmt.Fprintln(os.Stderr, "testhost:", err)
		client.Kill()
		os.Exit(1)
	}
	rc := client.ReattachConfig()
	if err := json.NewEncoder(os.Stdout).Encode(Launched{
		Pid: rc.Pid, Socket: rc.Addr.String(), Version: client.NegotiatedVersion(),
	}); err != nil {
		os.Exit(1)
	}
	// Wait to be killed: the test is about what survives the host. SIGTERM
	// is caught only so that an orderly stop also stops the plugin.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	<-sigs
	client.Kill()
}
