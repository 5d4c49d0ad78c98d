package main

import (
	"testing"
	"time"
)

func TestFormatList(t *testing.T) {
	got := formatList([]string{"ID|Type|Status", "web|service|running", "a-longer-id|batch|dead"})
	want := "" +
		"ID           Type     Status\n" +
		"web          service  running\n" +
		"a-longer-id  batch    dead"
	if got != want {
		t.Errorf("formatList:\n%s\nwant:\n%s", got, want)
	}
}

func TestFormatKV(t *testing.T) {
	got := formatKV([]string{"ID|abc", "Client Status|running", "Empty|"})
	want := "" +
		"ID            = abc\n" +
		"Client Status = running\n" +
		"Empty         ="
	if got != want {
		t.Errorf("formatKV:\n%q\nwant:\n%q", got, want)
	}
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		0: "just now", 5 * time.Second: "5s ago", 62 * time.Second: "1m2s ago",
		3*time.Hour + 4*time.Minute: "3h4m ago", 72 * time.Hour: "3d ago", -time.Hour: "just now",
	} {
		if got := ago(now, now.Add(-d)); got != want {
			t.Errorf("ago(%v) = %q, want %q", d, got, want)
		}
	}
	if got := ago(now, time.Time{}); got != "N/A" {
		t.Errorf("ago(zero) = %q", got)
	}
}
