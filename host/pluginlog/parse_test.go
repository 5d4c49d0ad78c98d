package pluginlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestParse(t *testing.T) {
	long := strings.Repeat("x", MaxLineBytes+10)
	for _, tc := range []struct {
		name, line string
		level      hclog.Level
		msg, mod   string
		args       string // fmt of Args
	}{
		{"hclog line", `{"@level":"warn","@message":"disk low","@module":"mockcsi","@timestamp":"2024-01-01T00:00:00Z","free":12,"vol":"v1"}`,
			hclog.Warn, "disk low", "mockcsi", "[free 12 vol v1]"},
		{"every level", `{"@level":"TRACE","@message":"m"}`, hclog.Trace, "m", "", "[]"},
		{"crlf", "{\"@level\":\"error\",\"@message\":\"m\"}\r\n", hclog.Error, "m", "", "[]"},
		{"not json", `panic: runtime error`, hclog.Info, "panic: runtime error", "", "[]"},
		{"empty", ``, hclog.Info, "(empty line)", "", "[]"},
		{"blank", "  \t ", hclog.Info, "(empty line)", "", "[]"},
		{"json array", `[1,2]`, hclog.Info, "[1,2]", "", "[]"},
		{"json string", `"hi"`, hclog.Info, `"hi"`, "", "[]"},
		{"json null", `null`, hclog.Info, "null", "", "[]"},
		{"cut object", `{"@message":"m"`, hclog.Info, `{"@message":"m"`, "", "[]"},
		{"trailing garbage", `{"@message":"m"} x`, hclog.Info, `{"@message":"m"} x`, "", "[]"},
		{"message a number", `{"@message": 42}`, hclog.Info, "42", "", "[]"},
		{"message an object", `{"@message": {"a": [1, 2]}}`, hclog.Info, `{"a":[1,2]}`, "", "[]"},
		{"message null", `{"@message": null}`, hclog.Info, "(no message)", "", "[]"},
		{"no message", `{"@level":"debug"}`, hclog.Debug, "(no message)", "", "[]"},
		{"level a list", `{"@level": [], "@message": "m"}`, hclog.Info, "m", "", "[@level []]"},
		{"level unknown", `{"@level": "loud", "@message": "m"}`, hclog.Info, "m", "", "[@level loud]"},
		{"level off", `{"@level": "off", "@message": "m"}`, hclog.Info, "m", "", "[@level off]"},
		{"module a number", `{"@module": 7, "@message": "m"}`, hclog.Info, "m", "", "[@module 7]"},
		{"timestamp odd", `{"@timestamp": {}, "@message": "m"}`, hclog.Info, "m", "", "[]"},
		{"value types", `{"@message":"m","b":true,"n":null,"o":{"x":1},"a":[1,"2"],"big":123456789012345678901234567890,"f":1.5e3}`,
			hclog.Info, "m", "", "[a [1,\"2\"] b true big 123456789012345678901234567890 f 1.5e3 n <nil> o {\"x\":1}]"},
		{"reserved keys", `{"@message":"m","task":"other","alloc_id":"x"}`, hclog.Info, "m", "", "[plugin_alloc_id x plugin_task other]"},
		{"newline in message", `{"@message":"a\n2024 [ERROR] agent: forged"}`, hclog.Info, `a\n2024 [ERROR] agent: forged`, "", "[]"},
		{"escape in key", "{\"@message\":\"m\",\"k\\u001b[31m\":1}", hclog.Info, "m", "", "[k\\x1b[31m 1]"},
		{"invalid utf8", "caf\xe9", hclog.Info, "caf\uFFFD", "", "[]"},
		{"deep nesting", strings.Repeat("[", 20000) + strings.Repeat("]", 20000), hclog.Info, "", "", "[]"},
		{"duplicate keys", `{"@message":"a","@message":"b"}`, hclog.Info, "b", "", "[]"},
		{"huge line", long, hclog.Info, "", "", "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := Parse([]byte(tc.line))
			if e.Level != tc.level {
				t.Errorf("level %v, want %v", e.Level, tc.level)
			}
			if tc.msg != "" && e.Message != tc.msg {
				t.Errorf("message %q, want %q", e.Message, tc.msg)
			}
			if e.Module != tc.mod {
				t.Errorf("module %q, want %q", e.Module, tc.mod)
			}
			if got := fmt.Sprint(e.Args); got != tc.args {
				t.Errorf("args %s, want %s", got, tc.args)
			}
		})
	}
	if e := Parse([]byte(long)); len(e.Message) > MaxLineBytes+100 || !strings.Contains(e.Message, "truncated from") {
		t.Errorf("huge line gave a %d-byte message", len(e.Message))
	}
}

func TestParseBoundsKeys(t *testing.T) {
	m := map[string]any{"@message": "m"}
	for i := range 1000 {
		m[fmt.Sprintf("k%04d", i)] = i
	}
	b, _ := json.Marshal(m)
	e := Parse(b)
	if len(e.Args) != 2*maxArgs+2 || e.Args[len(e.Args)-2] != "plugin_keys_dropped" || e.Args[len(e.Args)-1] != 1000-maxArgs {
		t.Fatalf("%d args, tail %v", len(e.Args), e.Args[len(e.Args)-2:])
	}
}

// FuzzPluginLogLine: no line panics Parse or the agent's logger, and every
// line yields a real level and a message.
func FuzzPluginLogLine(f *testing.F) {
	for _, s := range []string{
		`{"@level":"info","@message":"hello","@module":"p","@timestamp":"2024-01-01T00:00:00.000Z","k":"v"}`,
		`{"@message": 42}`, `{"@level": []}`, `{"@level": null, "@message": {}}`, `{"@module": {"a": 1}}`,
		`not json`, ``, "\x00\xff\n", `{"a":1e999}`, `{"":""}`, `{"task":1}`,
	} {
		f.Add([]byte(s))
	}
	text := hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Trace})
	js := hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Trace, JSONFormat: true})
	f.Fuzz(func(t *testing.T, line []byte) {
		e := Parse(line)
		if e.Level < hclog.Trace || e.Level > hclog.Error {
			t.Fatalf("level %v", e.Level)
		}
		if e.Message == "" {
			t.Fatal("empty message")
		}
		if len(e.Args)%2 != 0 {
			t.Fatalf("odd args %v", e.Args)
		}
		if bytes.ContainsAny([]byte(e.Message), "\n\r") {
			t.Fatalf("raw newline in message %q", e.Message)
		}
		for i := 0; i < len(e.Args); i += 2 {
			if _, ok := e.Args[i].(string); !ok {
				t.Fatalf("key %T", e.Args[i])
			}
		}
		for _, l := range []hclog.Logger{text, js} {
			if e.Module != "" {
				l = l.Named(e.Module)
			}
			l.Log(e.Level, e.Message, e.Args...)
		}
	})
}
