//go:build unix

package regauth

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

// A helper that answers and exits, leaving a child of its own (an agent
// it started) holding its output open, has answered: its answer is
// taken, as docker takes it, where the bounded wait for the pipes to
// close failed the lookup.
func TestReview184HelperChildHoldsOutput(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	helperConfig(t, "agent", `cat >/dev/null
echo '{"Username":"alice","Secret":"s3cret"}'
sleep 30 & echo $! > "`+pidfile+`"
exit 0`)
	t.Cleanup(func() {
		if data, err := os.ReadFile(pidfile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	reg, err := name.NewRegistry("registry.example.com")
	if err != nil {
		t.Fatal(err)
	}
	a, err := keychain{}.ResolveContext(context.Background(), reg)
	if err != nil {
		t.Fatalf("a helper that answered and exited 0: %v", err)
	}
	if cfg, err := a.Authorization(); err != nil || cfg.Username != "alice" || cfg.Password != "s3cret" {
		t.Fatalf("credentials %+v, %v", cfg, err)
	}
}
