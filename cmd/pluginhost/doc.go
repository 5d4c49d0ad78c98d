// Command pluginhost is the agent and its CLI, one binary.
//
// # Layout
//
// main.go builds a hashicorp/cli CLI from the command table in commands();
// each command lives in its own file (job_run.go is `pluginhost job run`),
// shares a *Meta (context, Ui, raw output writer, environment, clock) and
// talks to the agent only through host/api's Client. run() is main without
// the process, so tests drive every command in-process against a real API
// server on a real unix socket.
//
// # Conventions
//
//   - Flags are single-dash (-address, -json, -verbose), as in Nomad. Every
//     read command takes -json, which prints the API's JSON unchanged, so
//     scripts never parse the tables.
//   - Tables and "Key = Value" views come from format.go's formatList and
//     formatKV; empty values print as <none>, missing times as N/A. IDs are
//     shortened to 8 characters unless -verbose.
//   - The agent is found at -address, else $PLUGINHOST_ADDR, else
//     api.DefaultAddr (a per-user socket, where an agent without addr
//     listens).
//   - Exit codes: 0 success, 1 error (bad usage, agent unreachable, API
//     error), 2 from `job run` when an allocation failed.
//   - Nothing polls. `job run` subscribes to the event stream before it
//     registers the job, then follows only the stream; `alloc logs -f` and
//     `events` are streams that end on SIGINT/SIGTERM (Meta.Ctx).
//   - `job validate` needs no agent: it runs jobspec.ParseFile, the parser
//     the agent runs on submitted files.
//   - `agent` and the hidden `logmon` are entry points for other packages:
//     runAgent (agent.go) is where the agent is assembled, and `logmon` is
//     the log shipper the task runner re-executes this binary as. main hands
//     `logmon` the process before installing signal handlers, because the
//     shipper must outlive the agent and decides its own signal handling.
package main
