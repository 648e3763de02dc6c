package dockerfile

import (
	"path/filepath"
	"strings"
	"testing"
)

// The image is named by the distribution grammar whatever the directory
// or stage is called; names given as options are checked before any
// work, as a recipe's are.
func TestDockerfileNamesAreValid(t *testing.T) {
	for dir, want := range map[string]string{"a..b": "a-b", "App_.x": "app-x", "my__app": "my__app", "x--y": "x--y", "...": "image"} {
		d, err := Load(filepath.Join(filepath.Dir(write(t, map[string]string{dir + "/Dockerfile": "FROM scratch\n"})), dir, "Dockerfile"))
		if err != nil {
			t.Fatal(err)
		}
		p, err := d.Plan(Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Images[0].Repository; got != want {
			t.Errorf("directory %s: repository %s, want %s", dir, got, want)
		}
	}
	df := map[string]string{"Dockerfile": "FROM scratch AS a..b\n"}
	if p := mustPlan(t, df, Options{Target: "a..b"}); p.Images[0].Repository != "a-b" {
		t.Errorf("stage a..b: repository %s", p.Images[0].Repository)
	}
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{Tags: []string{"v1", "-x"}}, `tag "-x" is not an image tag`},
		{Options{Repository: "App"}, `repository "App" is not an image name`},
	} {
		if _, err := planFiles(t, df, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.opt, err, tc.want)
		}
	}
}
