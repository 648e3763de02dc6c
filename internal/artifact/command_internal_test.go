package artifact

import "testing"

// shellJoin quotes only what a shell would split or expand, and a quote
// inside a quoted argument survives.
func TestShellJoin(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"install", "-trimpath", "example.com/m/cmd/x@v1.0.0"}, "install -trimpath example.com/m/cmd/x@v1.0.0"},
		{[]string{"-ldflags=-s -w -X main.v=1"}, "'-ldflags=-s -w -X main.v=1'"},
		{[]string{"-ldflags=-X 'main.msg=a b'"}, `'-ldflags=-X '\''main.msg=a b'\'''`},
		{[]string{"", "$HOME", "a*b", "x;y"}, `'' '$HOME' 'a*b' 'x;y'`},
	} {
		if got := shellJoin(c.args); got != c.want {
			t.Errorf("shellJoin(%q) = %s, want %s", c.args, got, c.want)
		}
	}
}
