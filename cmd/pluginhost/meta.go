package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/cli"

	"github.com/pluginhost/pluginhost/api"
)

// Meta is what every command shares: where output goes, the environment, and
// the flags that every agent-talking command takes.
type Meta struct {
	// Ctx ends on SIGINT/SIGTERM; every blocking call uses it.
	Ctx context.Context
	Ui  cli.Ui
	// Out receives raw streams (logs) that must not gain newlines.
	Out    io.Writer
	Getenv func(string) string
	// Now is the clock for relative times ("5s ago"); nil is time.Now.
	Now func() time.Time

	address string
	token   string
	json    bool
	verbose bool
}

// flagSet returns a single-dash flag set. With agent it adds -address and
// -token; with read it adds -json and -verbose, which every read command
// takes.
func (m *Meta) flagSet(name string, agent, read bool) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if agent {
		fs.StringVar(&m.address, "address", "", "")
		fs.StringVar(&m.token, "token", "", "")
	}
	if read {
		fs.BoolVar(&m.json, "json", false, "")
		fs.BoolVar(&m.verbose, "verbose", false, "")
	}
	return fs
}

// parse parses args and reports errors the way every command does.
func (m *Meta) parse(fs *flag.FlagSet, args []string) bool {
	if err := fs.Parse(args); err != nil {
		m.Ui.Error(fmt.Sprintf("Error parsing arguments: %v", err))
		m.Ui.Error(fmt.Sprintf("Run 'pluginhost %s -h' for usage.", fs.Name()))
		return false
	}
	return true
}

// usageError reports wrong positional arguments.
func (m *Meta) usageError(name, msg string) int {
	m.Ui.Error(msg)
	m.Ui.Error(fmt.Sprintf("Run 'pluginhost %s -h' for usage.", name))
	return 1
}

// addr resolves the agent's address: -address, then PLUGINHOST_ADDR, then
// api.DefaultAddr (where an agent without addr listens); "" when even the
// default cannot be had, and client then says why.
func (m *Meta) addr() string {
	if a := m.explicitAddr(); a != "" {
		return a
	}
	a, _ := api.DefaultAddr()
	return a
}

// explicitAddr is -address, then PLUGINHOST_ADDR; "" means the default.
func (m *Meta) explicitAddr() string {
	if m.address != "" {
		return m.address
	}
	if m.Getenv != nil {
		return m.Getenv(api.EnvAddr)
	}
	return ""
}

// tokenSecret is -token, then PLUGINHOST_TOKEN; "" leaves the client to
// its default (the per-user token file on TCP, none on a unix socket).
func (m *Meta) tokenSecret() string {
	if m.token != "" {
		return m.token
	}
	if m.Getenv != nil {
		return m.Getenv(api.EnvToken)
	}
	return ""
}

func (m *Meta) client() (*api.Client, error) {
	// "" lets the client pick the default address itself: it then also
	// checks that the default socket's directory is this user's.
	c, err := api.NewClient(m.explicitAddr(), api.WithToken(m.tokenSecret()))
	if err != nil {
		return nil, fmt.Errorf("%w (set -address or %s)", err, api.EnvAddr)
	}
	return c, nil
}

// fail prints what went wrong doing something, with a hint when the agent
// is not there at all, and returns the exit code 1.
func (m *Meta) fail(doing string, err error) int {
	msg := fmt.Sprintf("Error %s: %v", doing, err)
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		msg += fmt.Sprintf("\nIs the agent running? It was looked for at %s (set -address or %s).", m.addr(), api.EnvAddr)
	} else if ne := (*net.OpError)(nil); errors.As(err, &ne) && ne.Op == "dial" {
		msg += fmt.Sprintf("\nCould not reach the agent at %s.", m.addr())
	}
	var se *api.StatusError
	if errors.As(err, &se) {
		if len(se.Diagnostics) > 0 {
			// The message is the diagnostics, with their source lines:
			// the field ("Source") and the status add nothing.
			msg = fmt.Sprintf("Error %s: %s", doing, strings.TrimPrefix(se.ErrorResponse.Error, se.Field+": "))
		}
		msg += m.tokenHint(se)
		for _, d := range se.Diagnostics {
			if d.Range != "" && strings.Contains(msg, d.Range) {
				continue // the message shows it already
			}
			line := "  " + d.Summary
			if d.Range != "" {
				line = "  " + d.Range + ": " + d.Summary
			}
			if d.Detail != "" {
				line += "; " + d.Detail
			}
			msg += "\n" + line
		}
		if len(se.Matches) > 0 {
			msg += "\nMatching IDs:\n  " + strings.Join(se.Matches, "\n  ")
		}
	}
	m.Ui.Error(msg)
	return 1
}

// tokenHint says where a token comes from when the agent refused the one
// sent (or its absence).
func (m *Meta) tokenHint(se *api.StatusError) string {
	if se.StatusCode != http.StatusUnauthorized && !(se.StatusCode == http.StatusForbidden && se.Field == api.HeaderToken) {
		return ""
	}
	hint := fmt.Sprintf("\nThe agent at %s wants a token: set -token or %s (`pluginhost operator token` on the agent's unix socket, or as the agent's user, shows it).", m.addr(), api.EnvToken)
	if m.tokenSecret() == "" {
		if paths, err := api.UserTokenPaths(m.addr()); err == nil {
			hint += fmt.Sprintf("\nNo token was found in %s, where an agent on that address leaves it for the user it runs as.", paths[0])
		}
	}
	return hint
}

// runListOrShow is the Run of a "status" command: with no argument it
// lists (list), with one it shows that object (show). what names the
// argument in the usage error ("a job ID").
func (m *Meta) runListOrShow(name, what string, args []string, list func(*api.Client) int, show func(*api.Client, string) int) int {
	fs := m.flagSet(name, true, true)
	if !m.parse(fs, args) {
		return 1
	}
	if fs.NArg() > 1 {
		return m.usageError(name, "This command takes at most one argument: "+what)
	}
	client, err := m.client()
	if err != nil {
		return m.fail("connecting to the agent", err)
	}
	defer client.Close()
	if fs.NArg() == 0 {
		return list(client)
	}
	return show(client, fs.Arg(0))
}

// outputJSON prints v indented, as -json asks.
func (m *Meta) outputJSON(v any) int {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error encoding JSON: %v", err))
		return 1
	}
	m.Ui.Output(string(b))
	return 0
}

func (m *Meta) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// shortID shortens IDs for tables, as Nomad does, unless -verbose.
func (m *Meta) shortID(id string) string {
	if m.verbose || len(id) <= 8 {
		return id
	}
	return id[:8]
}

// helpText trims a command's help so that each can be written as a raw
// string literal.
func helpText(s string) string { return strings.TrimSpace(s) }

// General options shared by the help of every command that talks to an agent.
const helpAgentOptions = `
General Options:

  -address=<addr>
    The agent's API address: unix:///path/to.sock or 127.0.0.1:PORT.
    Overrides PLUGINHOST_ADDR. The default is where an agent without
    addr listens: $XDG_RUNTIME_DIR/pluginhost/api.sock, for root
    /run/pluginhost/api.sock, else /tmp/pluginhost-<uid>/api.sock.

  -token=<secret>
    The API token, sent as X-Nomad-Token; overrides PLUGINHOST_TOKEN.
    Needed only on TCP: the unix socket's file mode is its authentication.
    Without either, a TCP client uses the token the agent left for the
    user it runs as, in ~/.config/pluginhost/tokens/<addr>.`

const helpReadOptions = `
  -json
    Print the API's JSON instead of the formatted view.

  -verbose
    Print full IDs and every event.`
