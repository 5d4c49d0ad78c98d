// Package config reads the pluginhost agent configuration: one HCL file,
// decoded as strictly as job files (unknown keys are errors, every error
// carries its file:line:col, all errors are reported at once) through the
// same hclstrict decoder.
//
// # Invariants
//
//   - A *Config from ParseFile is validated and final: defaults applied,
//     log_level lowercase, data_dir and job paths absolute. Relative paths in
//     the file resolve against the file's directory, never the agent's working
//     directory, so `pluginhost agent -config /etc/pluginhost/agent.hcl` means
//     the same from anywhere.
//   - Listed job files exist when the config is read; parsing them is the
//     agent's job (their errors then name their own files).
//   - Dev returns the same defaults with DevMode set and no DataDir; the
//     caller owns the temporary directory. Call Validate after filling it in.
//
// # Sockets and the 107-byte limit
//
// Unix socket paths longer than 107 bytes cannot be bound on Linux. Nomad
// lets a long data_dir through and CSI then fails with dial timeouts. Here an
// addr socket that would be too long is an error at addr, an explicit
// plugin.socket_dir must be absolute and at
// most MaxSocketDirLen (26) bytes. Without socket_dir the task runner
// (taskrunner.SocketDir) picks each allocation's socket directory, falling
// back from <data_dir>/sockets to a short root derived from a hash of the
// data dir when data_dir is long; that choice lives in one place only.
//
// # The API address
//
// addr is a unix:///abs/path socket or a loopback host:port; left out, the
// agent listens on host/api.DefaultAddr, where the CLI looks (a per-user
// socket: $XDG_RUNTIME_DIR/pluginhost/api.sock, /run/pluginhost/api.sock for
// root). A loopback host:port is 127.0.0.1, ::1 or localhost (port 0 picks a
// free port); other TCP addresses are refused: the API launches processes as
// the agent's user over plain HTTP, and its tokens must not cross a network.
//
// # Tokens
//
// The acl block sets the API's tokens (management_token, read_token); left
// out, the agent generates them at its first start (host/api.OpenTokens).
package config
