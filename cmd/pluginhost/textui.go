package main

import (
	"github.com/hashicorp/cli"

	"github.com/pluginhost/pluginhost/internal/text"
)

// textUi escapes control characters in everything a command prints
// through its Ui, newlines and tabs aside (text.EscapeLines): plugins,
// tasks and job files put strings into what the agent returns (a plugin's
// name and node ID, volume IDs, context values, a task's handshake line in
// an event), and a plugin that answered "\x1b]52;c;...\a" wrote to the
// operator's clipboard through `plugin status`. Table cells escape
// newlines too (cell). JSON output is unchanged: it has no raw control
// characters.
type textUi struct{ cli.Ui }

func (u textUi) Output(s string) { u.Ui.Output(text.EscapeLines(s)) }
func (u textUi) Info(s string)   { u.Ui.Info(text.EscapeLines(s)) }
func (u textUi) Warn(s string)   { u.Ui.Warn(text.EscapeLines(s)) }
func (u textUi) Error(s string)  { u.Ui.Error(text.EscapeLines(s)) }
