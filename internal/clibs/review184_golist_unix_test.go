//go:build unix

package clibs

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// go list printing more than maxGoList is refused, not read as far as it
// was kept: the packages past the bound, and the C libraries they link,
// would be left out of the licences without a word.
func TestReview184GoListOverBoundRefused(t *testing.T) {
	line := `{"ImportPath":"example.com/p","Name":"p"}` + "\n"
	n := maxGoList/len(line) + 2
	b := Build{
		Dir:      t.TempDir(),
		Packages: []string{"./..."},
		Command: func(ctx context.Context, _ string, _ ...string) *exec.Cmd {
			return exec.CommandContext(ctx, "sh", "-c", fmt.Sprintf("yes '%s' | head -n %d", strings.TrimSuffix(line, "\n"), n))
		},
	}
	pkgs, err := goList(context.Background(), b)
	if err == nil {
		t.Fatalf("go list of %d bytes, over the %d read, gave %d packages and no error", n*len(line), maxGoList, len(pkgs))
	}
	if !strings.Contains(err.Error(), "over") {
		t.Errorf("error does not say the output was over its bound: %v", err)
	}
}
