//go:build !windows

package dockerfile

import (
	"reflect"
	"testing"
)

// A context file whose Linux name holds a backslash is copied when the
// line names it, as BuildKit copies it once the file reaches its daemon:
// `COPY "a\\b" /x` alone fails there (not found) only because the
// context is sent filtered by the sources as patterns, in which \b is b;
// with the whole context sent (a `COPY . /d/` in the same Dockerfile),
// BuildKit v0.29.0 copies a\b to /x. Unquoted, the lexer makes a\b ab.
func TestDockerfileBackslashInLinuxSourceName(t *testing.T) {
	fs := map[string]string{"a\\b": "content", "ab": "ab",
		"Dockerfile": "FROM scratch\nCOPY \"a\\\\b\" /x\nCOPY 'a\\b' /q\nCOPY a\\b /y\n"}
	p := planCase(t, fs, Options{}, "")
	want := []string{"/x<-local:a\\b", "/q<-local:a\\b", "/y<-local:ab"}
	if got := placements(t, p); !reflect.DeepEqual(got, want) {
		t.Errorf("layers %q, want %q", got, want)
	}
}

// In a Windows stage a source's \ is a separator, as BuildKit on a
// Windows host reads it; BuildKit v0.29.0 on Linux reports `COPY
// bin\app C:\app\bin\` not found (as "/bin/app"), by the same filter.
func TestDockerfileBackslashInWindowsSource(t *testing.T) {
	fs := map[string]string{"bin/hello": "h",
		"Dockerfile": "# escape=`\nFROM windows-hostprocess-scratch\nCOPY bin\\hello C:\\app\\\n"}
	p := planCase(t, fs, Options{Platforms: []string{"windows/amd64"}}, "")
	want := []string{"/app/<-local:bin/hello"}
	if got := placements(t, p); !reflect.DeepEqual(got, want) {
		t.Errorf("layers %q, want %q", got, want)
	}
}
