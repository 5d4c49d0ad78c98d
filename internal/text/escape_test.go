package text

import "testing"

// Every attack of issue 26 §9 comes out as inert text.
func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want, lines string }{
		{"mockcsi.pluginhost", "mockcsi.pluginhost", "mockcsi.pluginhost"},
		{"naïve 名前 ✓", "naïve 名前 ✓", "naïve 名前 ✓"},
		{"clip\x1b]52;c;ZWNobyBwd25lZA==\a", `clip\x1b]52;c;ZWNobyBwd25lZA==\a`, `clip\x1b]52;c;ZWNobyBwd25lZA==\a`},
		{"\x1b]8;;https://evil.example\x1b\\ok\x1b]8;;\x1b\\", `\x1b]8;;https://evil.example\x1b\ok\x1b]8;;\x1b\`, `\x1b]8;;https://evil.example\x1b\ok\x1b]8;;\x1b\`},
		{"\x1b[2J\x1b[Hhealthy", `\x1b[2J\x1b[Hhealthy`, `\x1b[2J\x1b[Hhealthy`},
		{"row\nfake|row\r", `row\nfake|row\r`, "row\nfake|row\\r"},
		{"tab\there", `tab\there`, "tab\there"},
		{"C1 \u009b31m", `C1 \u009b31m`, `C1 \u009b31m`},
		{"bidi \u202eevil", `bidi \u202eevil`, `bidi \u202eevil`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`, `bad \xff\xfe utf8`},
		{`quotes " and \ stay`, `quotes " and \ stay`, `quotes " and \ stay`},
		{"", "", ""},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := EscapeLines(c.in); got != c.lines {
			t.Errorf("EscapeLines(%q) = %q, want %q", c.in, got, c.lines)
		}
	}
}

func BenchmarkEscapeClean(b *testing.B) {
	s := "csi-hostpath  0.1.0  node-7  healthy  3 volumes"
	for b.Loop() {
		_ = Escape(s)
	}
}
