package pluginlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
)

const (
	// MaxLineBytes bounds one log line. A longer line is cut here and
	// logged as plain text: a plugin must not make the agent buffer an
	// unbounded line, and a cut JSON object cannot be parsed anyway.
	MaxLineBytes = 64 << 10
	// maxArgs bounds how many of a line's extra keys are kept, so that one
	// line cannot turn into thousands of fields in the agent's log.
	maxArgs = 64
	// maxModuleBytes bounds @module, which becomes part of a logger name.
	maxModuleBytes = 128
)

// Entry is one plugin log line as the agent logs it.
type Entry struct {
	// Level is always one of Trace..Error.
	Level hclog.Level
	// Message is never empty.
	Message string
	// Module is the plugin logger's name (@module), possibly empty.
	Module string
	// Args are the line's other keys as key/value pairs, sorted by key.
	Args []any
}

// reserved are keys a plugin's line may carry that the agent's logger
// already owns; a plugin's own value is kept under a prefixed key so that it
// cannot pass for the agent's.
var reserved = map[string]bool{"alloc_id": true, "task": true}

// Parse reads one line an sdk plugin wrote (hclog JSON: @level, @message,
// @module, @timestamp and any other keys). It accepts any bytes: a line that
// is not a JSON object is logged whole as an info message, and a reserved
// key of the wrong type is kept as an ordinary key with its JSON text, so
// nothing the plugin wrote is hidden. @timestamp is dropped: the agent's log
// line carries its own time, at most a poll interval later.
func Parse(line []byte) Entry {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) > MaxLineBytes {
		return Entry{
			Level:   hclog.Info,
			Message: clean(string(line[:MaxLineBytes])) + fmt.Sprintf(" [line truncated from %d bytes]", len(line)),
		}
	}
	var fields map[string]json.RawMessage
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &fields) != nil || fields == nil {
		return plain(line)
	}
	e := Entry{Level: hclog.Info}
	if raw, ok := fields["@level"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil && validLevel(hclog.LevelFromString(s)) {
			e.Level = hclog.LevelFromString(s)
			delete(fields, "@level")
		}
	}
	if raw, ok := fields["@message"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			e.Message = clean(s)
		} else {
			// {"@message": 42} is a message all the same.
			e.Message = clean(string(compact(raw)))
		}
		delete(fields, "@message")
	}
	if raw, ok := fields["@module"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			e.Module = clean(truncate(s, maxModuleBytes))
			delete(fields, "@module")
		}
	}
	delete(fields, "@timestamp")
	if e.Message == "" {
		e.Message = "(no message)"
	}
	keys := slices.Sorted(maps.Keys(fields))
	dropped := 0
	if len(keys) > maxArgs {
		dropped = len(keys) - maxArgs
		keys = keys[:maxArgs]
	}
	e.Args = make([]any, 0, 2*len(keys)+2)
	for _, k := range keys {
		name := clean(k)
		if reserved[name] {
			name = "plugin_" + name
		}
		e.Args = append(e.Args, name, value(fields[k]))
	}
	if dropped > 0 {
		e.Args = append(e.Args, "plugin_keys_dropped", dropped)
	}
	return e
}

func plain(line []byte) Entry {
	msg := clean(string(line))
	if strings.TrimSpace(msg) == "" {
		msg = "(empty line)"
	}
	return Entry{Level: hclog.Info, Message: msg}
}

func validLevel(l hclog.Level) bool { return l >= hclog.Trace && l <= hclog.Error }

// value turns a JSON value into what hclog formats well: strings, numbers
// (json.Number keeps their text, so a large integer stays exact), booleans
// and nil as themselves, objects and arrays as their compact JSON text.
func value(raw json.RawMessage) any {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return clean(s)
		}
	case 't', 'f':
		var b bool
		if json.Unmarshal(raw, &b) == nil {
			return b
		}
	case 'n':
		return nil
	case '{', '[':
	default:
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			return n
		}
	}
	return clean(string(compact(raw)))
}

func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// clean makes text safe to put in a line of the agent's log: control
// characters are escaped (a newline in a plugin's message must not forge a
// line of the agent's own) and invalid UTF-8 is replaced.
func clean(s string) string {
	ok := utf8.ValidString(s)
	if ok {
		for i := 0; i < len(s); i++ {
			if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
				ok = false
				break
			}
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case (r < 0x20 && r != '\t') || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
