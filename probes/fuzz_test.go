package probes_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/replaycheck/replaycheck/probes"
)

// FuzzParse checks that no input makes the loader panic, and that it returns either a set or
// Diagnostics, never both and never neither. The fixtures are the seed corpus.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.y*ml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := probes.Parse("fuzz.yaml", data, probes.Limits{MaxOps: 1000})
		var ds probes.Diagnostics
		switch {
		case err == nil && set == nil:
			t.Fatal("no set and no error")
		case err != nil && set != nil:
			t.Fatalf("a set and an error: %v", err)
		case err != nil && (!errors.As(err, &ds) || len(ds) == 0):
			t.Fatalf("error is not Diagnostics: %v", err)
		}
	})
}
