package config

import (
	"os"
	"testing"
)

func BenchmarkParseExample(b *testing.B) {
	src, err := os.ReadFile(examplePath)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(src, examplePath); err != nil {
			b.Fatal(err)
		}
	}
}
