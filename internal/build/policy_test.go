package build

import (
	"go/version"
	"testing"
)

func TestGoRelease(t *testing.T) {
	for _, tc := range []struct {
		recorded string
		min      string
		ok       bool
	}{
		{"go1.26.8", "go1.26.8", true},
		{"go1.26.7", "go1.26.8", false},
		{"go1.22.0 X:boringcrypto", "go1.22.0", true},
		{"go1.22.0 X:boringcrypto", "go1.22.1", false},
		{"go1.27rc1", "go1.26.8", true},
		{"go1.27rc1", "go1.27.0", false},
		{"devel go1.27-0123abcd Tue Nov 3 10:00:00 2026 +0000", "go1.26.8", true},
		{"devel go1.27-0123abcd Tue Nov 3 10:00:00 2026 +0000", "go1.27.0", false},
	} {
		v := goRelease(tc.recorded)
		if !version.IsValid(v) {
			t.Errorf("%q: %q is not a Go version", tc.recorded, v)
			continue
		}
		if ok := version.Compare(v, tc.min) >= 0; ok != tc.ok {
			t.Errorf("%q against --min-go %s: ok=%v, want %v", tc.recorded, tc.min, ok, tc.ok)
		}
	}
}
