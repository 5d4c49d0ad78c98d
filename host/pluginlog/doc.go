// Package pluginlog brings an sdk plugin's own log into the agent's log.
//
// An sdk plugin (sdk.NewLogger) appends hclog JSON lines to the file named
// by PLUGINHOST_LOG_FILE and writes them to stderr best-effort. Its stderr
// goes to the task's log shipper, a separate process, so the agent never sees
// it; the file is what the agent reads. A Follower polls the file and logs
// every line through Parse, at the line's level, under the agent's logger
// named after the plugin's @module, with the line's other keys.
//
// Parse is ours rather than go-plugin's because go-plugin's stderr parser
// panics on lines such as {"@message": 42} (v1.8.0): a plugin's output is
// untrusted input to the agent. Parse accepts any bytes (FuzzPluginLogLine),
// bounds a line to MaxLineBytes and escapes control characters, so a line
// can neither crash the agent nor forge a line of its log.
package pluginlog
