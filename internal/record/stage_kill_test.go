package record

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// TestStageProcess stages a record at PALLET_TEST_RECORD in a process of
// its own and waits, as a build does while it pushes, for
// TestKilledStagedRecordIsSwept to kill it.
func TestStageProcess(t *testing.T) {
	path := os.Getenv("PALLET_TEST_RECORD")
	if path == "" {
		t.Skip("started by TestKilledStagedRecordIsSwept")
	}
	if _, err := Stage(path, &Build{Recipe: "pallet.yaml", Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	fmt.Println("staged")
	time.Sleep(time.Hour)
}

// A record a build staged is kept while that build runs, even one whose
// push has outlasted tempfile.Abandoned, and removed by the next build
// writing that record as soon as its build is killed: a build killed
// during a push left it for an hour.
func TestKilledStagedRecordIsSwept(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the killed process would keep its files open")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "app.tar.record.json")
	cmd, _ := fixture.StartTest(t, "TestStageProcess", "staged", "PALLET_TEST_RECORD="+path)
	staged := func() []string {
		var names []string
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if n := e.Name(); strings.HasPrefix(n, ".app.tar.record.json.new-") && !strings.HasSuffix(n, ".lock") {
				names = append(names, n)
			}
		}
		return names
	}
	live := staged()
	if len(live) != 1 {
		t.Fatalf("the live build staged %v, want one record", live)
	}
	long := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, live[0]), long, long); err != nil {
		t.Fatal(err)
	}
	b := &Build{Recipe: "pallet.yaml", Epoch: 2}
	if err := Write(path, b); err != nil {
		t.Fatal(err)
	}
	if got := staged(); len(got) != 1 || got[0] != live[0] {
		t.Fatalf("a concurrent build left %v of the live build's staged %s", got, live[0])
	}

	cmd.Process.Kill()
	cmd.Wait()
	if err := Write(path, b); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != filepath.Base(path) {
			t.Errorf("the next build left %s of the killed build's staged record", e.Name())
		}
	}
}
