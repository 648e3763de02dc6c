package golicenses

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestPrepare checks that Prepare starts loading the classifier exactly
// when Collect would classify one of the main module's licence texts.
func TestPrepare(t *testing.T) {
	kept := func(spdx string) func(string, []byte, func() (string, error)) (string, error) {
		return func(string, []byte, func() (string, error)) (string, error) {
			data, err := json.Marshal(remembered{SPDX: spdx, IDs: []string{spdx}, Confidence: 1})
			return string(data), err
		}
	}
	derives := func(_ string, _ []byte, derive func() (string, error)) (string, error) { return derive() }
	oldFormat := func(string, []byte, func() (string, error)) (string, error) { return `"MIT"`, nil }
	for _, c := range []struct {
		name     string
		files    map[string]string
		remember func(string, []byte, func() (string, error)) (string, error)
		want     bool
	}{
		{"licence, no memory", map[string]string{"LICENSE": corpus("GPL-2.0")}, nil, true},
		{"licence not remembered", map[string]string{"LICENSE": corpus("GPL-2.0")}, derives, true},
		// The quick corpus answers for a copy of MIT: the whole one
		// need not load for a module that links no other...
		{"a copy of a common licence, no other module", map[string]string{"LICENSE": "Copyright 2020 A. Person\n\n" + corpus("MIT"), "go.mod": "module example.com/m\n\ngo 1.22\n"}, derives, false},
		// ...but one new to the cache that requires others will meet
		// their texts after go build: loaded now, while it runs.
		{"a copy of a common licence, other modules", map[string]string{"LICENSE": "Copyright 2020 A. Person\n\n" + corpus("MIT"), "go.mod": "module example.com/m\n\ngo 1.22\n\nrequire example.com/dep v1.0.0\n"}, derives, true},
		{"licence remembered", map[string]string{"LICENSE": corpus("MIT"), "main.go": "package main\n"}, kept("MIT"), false},
		{"remembered by an older version", map[string]string{"LICENSE": corpus("GPL-2.0")}, oldFormat, true},
		{"no licence file", map[string]string{"main.go": "package main\n"}, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range c.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			loads := 0
			defer func(f func()) { loadClassifier = f }(loadClassifier)
			loadClassifier = func() { loads++ }
			Prepare(Options{SourceDir: dir, Remember: c.remember})
			if got := loads > 0; got != c.want {
				t.Errorf("classifier loaded: %v, want %v", got, c.want)
			}
			if loads > 1 {
				t.Errorf("loaded %d times", loads)
			}
		})
	}
}
