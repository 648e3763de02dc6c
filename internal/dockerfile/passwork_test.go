package dockerfile

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/platform"
)

// The passes that read bases plan the stages before each stop again:
// they share one maxWork, where each pass had its own and N bases read
// allowed N+1 times the bound (review r209).
func TestPlanPassesShareWorkBound(t *testing.T) {
	var b strings.Builder
	b.WriteString("FROM scratch AS s0\nCOPY a /a\n")
	for i := range 9000 {
		fmt.Fprintf(&b, "ENV A%d=x\n", i)
	}
	// Each later stage's $PATH stops the plan for its base; every pass
	// plans s0's ENV lines again.
	for i := 1; i <= 4; i++ {
		fmt.Fprintf(&b, "FROM example.com/img%d\nCOPY --from=s0 a /a%d\nENV P=$PATH\n", i, i)
	}
	read := func(ref string, p platform.Platform) (BaseMeta, error) {
		return BaseMeta{Env: []string{"PATH=/usr/bin"}}, nil
	}
	_, err := planFiles(t, map[string]string{"Dockerfile": b.String(), "a": "a"}, Options{ReadBase: read})
	if err == nil || !strings.Contains(err.Error(), "over 100000000 steps") {
		t.Errorf("planned with every pass allowed the whole bound: %v", err)
	}
}
