package sdk

import plugin "github.com/hashicorp/go-plugin"

// The launch contract between pluginhost and a plugin built with this package.
// pluginhost (host/driver) and the sdk both read it from here, so the two
// sides cannot drift apart.
const (
	// MagicCookieKey and MagicCookieValue are go-plugin's handshake cookie.
	// Their presence in the environment is how Serve knows that pluginhost
	// launched it; without them the binary runs as a standalone CSI driver.
	MagicCookieKey   = "PLUGINHOST_PLUGIN"
	MagicCookieValue = "b3f1c0e2-csi-plugin-7d4a9e61"

	// ProtocolVersion is the newest plugin protocol this sdk speaks.
	ProtocolVersion = 1

	// PluginCSI is the name, in every version's plugin set, of the plugin
	// that serves the CSI Identity/Controller/Node services.
	PluginCSI = "csi"

	// EnvLogLevel carries the host's log level (trace..error) to the plugin.
	EnvLogLevel = "PLUGINHOST_LOG_LEVEL"
	// EnvLogFile names a file the plugin appends its JSON log lines to, as
	// well as to stderr, so that nothing is lost while the host is down.
	EnvLogFile = "PLUGINHOST_LOG_FILE"
	// EnvCSIEndpoint is the CSI convention for the standalone socket.
	EnvCSIEndpoint = "CSI_ENDPOINT"
)

// Handshake is go-plugin's handshake for pluginhost plugins.
func Handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}
}
