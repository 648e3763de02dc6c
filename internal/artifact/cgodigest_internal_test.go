package artifact

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A build without cgo (cgo: false, or CGO_ENABLED=0 in its env, which
// goEnv puts last) has no header in its key, and its modules' Go files,
// with no link up, are not read for their preambles: they took 0.5 s for
// a tree the size of GOROOT in every key, cgo off or not. A build with
// cgo (cgo: true, or CGO_ENABLED=1 in env) has them. Not parallel: it
// sets goSourceReadHook.
func TestModuleKeyCgoOff(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(mod, "main.go"), "package main\n\n// #include \"../inc/v.h\"\nimport \"C\"\n\nfunc main() { println(C.V) }\n")
	writeTestFile(t, filepath.Join(dir, "inc", "v.h"), "#define V 1\n")
	var mu sync.Mutex
	reads := 0
	goSourceReadHook = func(string) {
		mu.Lock()
		defer mu.Unlock()
		reads++
	}
	defer func() { goSourceReadHook = nil }()
	for i, c := range []struct {
		name string
		g    Go
		on   bool
	}{
		{"cgo: false", Go{CGO: false}, false},
		{"cgo: true, CGO_ENABLED=0", Go{CGO: true, Env: []string{"CGO_ENABLED=1", "CGO_ENABLED=0"}}, false},
		{"cgo: true", Go{CGO: true}, true},
		{"cgo: false, CGO_ENABLED=1", Go{CGO: false, Env: []string{"CGO_ENABLED=1"}}, true},
	} {
		c.g.Module, c.g.Packages = mod, []string{"."}
		f := New()
		key := func() []string {
			t.Helper()
			k, _, err := c.g.Key(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
		mu.Lock()
		reads = 0
		mu.Unlock()
		before := key()
		mu.Lock()
		read := reads
		mu.Unlock()
		if (read > 0) != c.on {
			t.Errorf("%s: %d files read for their imports, want some %v", c.name, read, c.on)
		}
		// Another size each time: a stamp may not see an edit
		// within its granularity otherwise.
		writeTestFile(t, filepath.Join(dir, "inc", "v.h"), "#define V "+strconv.Itoa(i+2)+strings.Repeat(" ", i+1)+"\n")
		if changed := !slices.Equal(key(), before); changed != c.on {
			t.Errorf("%s: ../inc/v.h edited: the key changed %v, want %v", c.name, changed, c.on)
		}
	}
}
