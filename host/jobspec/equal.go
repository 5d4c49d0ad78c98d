package jobspec

import "reflect"

// Equal reports whether two jobs mean the same, ignoring where they were
// read from: submitting an equal job again changes nothing.
func Equal(a, b *Job) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.SourcePath, y.SourcePath = "", ""
	return reflect.DeepEqual(&x, &y)
}
