package volumespec

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"regexp"
	"strconv"
	"strings"
)

// byteUnits are the suffixes Nomad accepts in capacity_min and capacity_max
// (go-humanize's ParseBytes table): decimal "k", "M", "G"... and binary
// "Ki", "Mi", "Gi"..., each with or without a trailing "B", in any case.
var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "ki": 1 << 10, "kib": 1 << 10,
	"m": 1e6, "mb": 1e6, "mi": 1 << 20, "mib": 1 << 20,
	"g": 1e9, "gb": 1e9, "gi": 1 << 30, "gib": 1 << 30,
	"t": 1e12, "tb": 1e12, "ti": 1 << 40, "tib": 1 << 40,
	"p": 1e15, "pb": 1e15, "pi": 1 << 50, "pib": 1 << 50,
	"e": 1e18, "eb": 1e18, "ei": 1 << 60, "eib": 1 << 60,
}

// sizeNumber is the number part of a size. go-humanize also takes "1,000";
// a comma is a decimal separator in much of the world, so it is refused
// rather than guessed at.
var sizeNumber = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)$`)

// maxSizeLen bounds the text ParseBytes looks at. The longest sensible size
// is about 25 characters; the bound keeps big.Rat away from megabyte-long
// digit strings.
const maxSizeLen = 64

// Errors of ParseBytes, for callers that word their own message.
var (
	ErrSizeSyntax   = errors.New("not a size")
	ErrSizeNegative = errors.New("negative size")
	ErrSizeRange    = errors.New("size out of range")
)

// ParseBytes reads a size such as "10GiB", "1.5G", "100 MB" or "1024" the way
// Nomad reads capacity_min and capacity_max: "k"/"kB" and up are powers of
// 1000, "Ki"/"KiB" and up powers of 1024, a bare number is bytes, and case
// does not matter. Unlike go-humanize, the result must be a whole number of
// bytes ("1.5" is refused, not truncated) and fit in an int64, and thousands
// separators are refused. Errors wrap one of the ErrSize values.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if len(t) > maxSizeLen {
		return 0, fmt.Errorf("%w: %q is longer than %d characters", ErrSizeSyntax, s, maxSizeLen)
	}
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("%w: %q", ErrSizeNegative, s)
	}
	end := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end < 0 {
		end = len(t)
	}
	num, unit := t[:end], strings.ToLower(strings.TrimSpace(t[end:]))
	if !sizeNumber.MatchString(num) {
		return 0, fmt.Errorf("%w: %q does not start with a number", ErrSizeSyntax, s)
	}
	mult, ok := byteUnits[unit]
	switch {
	case !ok && strings.HasPrefix(t[end:], ","):
		return 0, fmt.Errorf("%w: %q: write the number without separators", ErrSizeSyntax, s)
	case !ok:
		return 0, fmt.Errorf("%w: %q has an unknown unit %q (use B, kB, MB, GB, TB, PB, EB or KiB, MiB, GiB, TiB, PiB, EiB)",
			ErrSizeSyntax, s, strings.TrimSpace(t[end:]))
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		// Unreachable: sizeNumber only lets through what SetString reads.
		return 0, fmt.Errorf("%w: %q", ErrSizeSyntax, s)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, fmt.Errorf("%w: %q is not a whole number of bytes", ErrSizeSyntax, s)
	}
	n := r.Num()
	if !n.IsInt64() {
		return 0, fmt.Errorf("%w: %q is more than %d bytes", ErrSizeRange, s, int64(math.MaxInt64))
	}
	return n.Int64(), nil
}

// formatUnits are FormatBytes' units, largest first, binary before decimal
// at each magnitude: the first one that writes a size exactly wins.
var formatUnits = []struct {
	name string
	size uint64
}{
	{"EiB", 1 << 60}, {"EB", 1e18}, {"PiB", 1 << 50}, {"PB", 1e15}, {"TiB", 1 << 40}, {"TB", 1e12},
	{"GiB", 1 << 30}, {"GB", 1e9}, {"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"kB", 1e3},
}

// FormatBytes writes a capacity for people: "10 GiB", "1.5 GB", "512 B". The
// largest unit that writes n exactly with at most two decimals is chosen,
// so the text reads back (ParseBytes) to n. A size no unit writes exactly is
// rounded to two decimals of the largest binary unit and marked with a
// leading "~" ("~9.31 GiB"), so a rounded figure never passes for an exact
// one.
func FormatBytes(n int64) string {
	if n < 0 {
		// Not a capacity; shown as is rather than hidden.
		return strconv.FormatInt(n, 10) + " B"
	}
	u := uint64(n)
	for _, unit := range formatUnits {
		if u < unit.size {
			continue
		}
		rem := u % unit.size
		hi, lo := bits.Mul64(rem, 100)
		if bits.Rem64(hi, lo, unit.size) != 0 {
			continue
		}
		cents, _ := bits.Div64(hi, lo, unit.size)
		return fmt.Sprintf("%d%s %s", u/unit.size, decimals(cents), unit.name)
	}
	if u < 1<<10 {
		return fmt.Sprintf("%d B", u)
	}
	for _, unit := range formatUnits {
		if strings.HasSuffix(unit.name, "iB") && u >= unit.size {
			v := strconv.FormatFloat(float64(u)/float64(unit.size), 'f', 2, 64)
			v = strings.TrimSuffix(strings.TrimRight(v, "0"), ".")
			return "~" + v + " " + unit.name
		}
	}
	// Unreachable: 1 KiB is in formatUnits.
	return fmt.Sprintf("%d B", u)
}

// decimals writes hundredths as a fraction without trailing zeros.
func decimals(cents uint64) string {
	switch {
	case cents == 0:
		return ""
	case cents%10 == 0:
		return fmt.Sprintf(".%d", cents/10)
	default:
		return fmt.Sprintf(".%02d", cents)
	}
}
