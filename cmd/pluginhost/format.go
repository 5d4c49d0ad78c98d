package main

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pluginhost/pluginhost/internal/text"
)

// formatList aligns "a|b|c" rows into columns two spaces apart, the way
// Nomad's tables look. The first row is the header.
func formatList(rows []string) string {
	return columnize(rows, "  ")
}

// formatKV aligns "Key|Value" rows into "Key   = Value" lines, like Nomad's
// detail views.
func formatKV(rows []string) string {
	return columnize(rows, " = ")
}

func columnize(rows []string, glue string) string {
	cells := make([][]string, len(rows))
	var widths []int
	for i, r := range rows {
		cells[i] = strings.Split(r, "|")
		for j, c := range cells[i] {
			if j >= len(widths) {
				widths = append(widths, 0)
			}
			widths[j] = max(widths[j], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for i, row := range cells {
		var line strings.Builder
		for j, c := range row {
			line.WriteString(c)
			if j < len(row)-1 {
				line.WriteString(strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c)))
				line.WriteString(glue)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		if i < len(cells)-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// cell makes a value safe for a "|"-separated row, and for the terminal:
// control characters, newlines included, are escaped (text.Escape), so a
// value cannot add a row or redraw the table.
func cell(s string) string {
	if s == "" {
		return "<none>"
	}
	return strings.ReplaceAll(text.Escape(s), "|", "/")
}

// formatTime prints an absolute time, as Nomad does in tables.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "N/A"
	}
	return t.Format(time.RFC3339)
}

// formatUnixNano prints a Nomad-style unix-nanosecond timestamp.
func formatUnixNano(ns int64) string {
	if ns == 0 {
		return "N/A"
	}
	return formatTime(time.Unix(0, ns))
}

// ago prints how long before now t was ("3m2s ago").
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "N/A"
	}
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%ds ago", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm ago", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

func agoNano(now time.Time, ns int64) string {
	if ns == 0 {
		return "N/A"
	}
	return ago(now, time.Unix(0, ns))
}
