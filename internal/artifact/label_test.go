package artifact_test

import (
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/platform"
)

// An artifact is labelled with its mode only where the recipe has modes;
// one of a single kind is labelled with the kind, without "mode".
func TestRequestLabelSaysModeOnlyWithModes(t *testing.T) {
	p, err := platform.Parse("linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		r    artifact.Request
		want string
	}{
		{artifact.Request{Name: "crictl", Platform: p, Kind: &artifact.GoModule{}}, "artifact crictl (linux/amd64, gomod)"},
		{artifact.Request{Name: "f", Platform: p, Kind: &artifact.Local{}}, "artifact f (linux/amd64, local)"},
		{artifact.Request{Name: "crictl", Platform: p, Mode: "release", Kind: &artifact.URL{}}, "artifact crictl (linux/amd64, release mode)"},
		{artifact.Request{Name: "crictl", Platform: p, Mode: "source", Kind: &artifact.GoModule{}}, "artifact crictl (linux/amd64, source mode)"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
