package volumespec

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"1024", 1024},
		{"0", 0},
		{"10GiB", 10 << 30},
		{"10 GiB", 10 << 30},
		{"10gib", 10 << 30},
		{"100M", 100e6},
		{"100MB", 100e6},
		{"100mb", 100e6},
		{"1.5G", 1.5e9},
		{"500MiB", 500 << 20},
		{"500Mi", 500 << 20},
		{"1k", 1000},
		{"1K", 1000},
		{"1KiB", 1024},
		{"2B", 2},
		{".5k", 500},
		{"1.k", 1000},
		{"0.5KiB", 512},
		{"  3 TB  ", 3e12},
		{"7EiB", 7 << 60},
		{"9EB", 9e18},
		{"1PiB", 1 << 50},
	} {
		got, err := ParseBytes(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

func TestParseBytesErrors(t *testing.T) {
	for _, c := range []struct {
		in   string
		want error
	}{
		{"", ErrSizeSyntax},
		{"GiB", ErrSizeSyntax},
		{"10 GB GB", ErrSizeSyntax},
		{"10XB", ErrSizeSyntax},
		{"1,000", ErrSizeSyntax},
		{"1.5", ErrSizeSyntax},
		{"1.1.1G", ErrSizeSyntax},
		{"1e9", ErrSizeSyntax},
		{"0x10", ErrSizeSyntax},
		{".", ErrSizeSyntax},
		{"-1", ErrSizeNegative},
		{"-10GiB", ErrSizeNegative},
		{"8EiB", ErrSizeRange},
		{"10EB", ErrSizeRange},
		{"99999999999999999999", ErrSizeRange},
		{strings.Repeat("1", 100), ErrSizeSyntax},
	} {
		got, err := ParseBytes(c.in)
		if !errors.Is(err, c.want) {
			t.Errorf("ParseBytes(%q) = %d, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for _, c := range []struct {
		in   int64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{1000, "1 kB"},
		{1023, "1023 B"},
		{1024, "1 KiB"},
		{1536, "1.5 KiB"},
		{1500, "1.5 kB"},
		{10 << 30, "10 GiB"},
		{1.5e9, "1.5 GB"},
		{100e6, "100 MB"},
		{500 << 20, "500 MiB"},
		{1024000, "1000 KiB"},
		{1<<30 + 1<<28, "1.25 GiB"},
		{10<<30 + 1, "~10 GiB"},
		{10e9 + 1, "~9.31 GiB"},
		{math.MaxInt64, "~8 EiB"},
		{-5, "-5 B"},
	} {
		if got := FormatBytes(c.in); got != c.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestFormatBytesRoundTrip holds FormatBytes to its promise: an unmarked
// figure reads back exactly, a "~" figure is within rounding.
func TestFormatBytesRoundTrip(t *testing.T) {
	var sizes []int64
	for _, base := range []int64{1, 1000, 1 << 10, 1e6, 1 << 20, 1e9, 1 << 30, 1e12, 1 << 40, 1e15, 1 << 50, 1e18, 1 << 60} {
		for _, k := range []int64{1, 2, 3, 7, 10, 15, 100, 125, 999, 1000, 1023, 1024, 4095} {
			if base <= math.MaxInt64/k {
				sizes = append(sizes, base*k, base*k+1, base*k-1)
			}
		}
	}
	sizes = append(sizes, math.MaxInt64, 12345678901, 1<<62+1<<59)
	for _, n := range sizes {
		s := FormatBytes(n)
		text, approx := strings.CutPrefix(s, "~")
		if approx {
			// Rounded figures need not be whole bytes; read them as floats.
			num, unit, _ := strings.Cut(text, " ")
			f, err := strconv.ParseFloat(num, 64)
			mult, known := byteUnits[strings.ToLower(unit)]
			if err != nil || !known || math.Abs(f*float64(mult)-float64(n)) > float64(n)*0.005 {
				t.Errorf("FormatBytes(%d) = %q is more than rounding off", n, s)
			}
			continue
		}
		if got, err := ParseBytes(text); err != nil || got != n {
			t.Errorf("FormatBytes(%d) = %q reads back as %d, %v", n, s, got, err)
		}
	}
}
