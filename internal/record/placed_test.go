package record

import (
	"testing"

	"github.com/pallet-dev/pallet/internal/clibs"
)

func TestLicenceKept(t *testing.T) {
	a := &Artifact{GoBinaries: []GoBinary{
		{Path: "host-local.exe", GoLicense: "std@go1.26.8/LICENSE", Modules: []Module{
			{Path: "github.com/containernetworking/plugins"}, {Path: "go.opentelemetry.io/otel/trace"},
		}},
		{Path: "win-bridge.exe", GoLicense: "std@go1.26.8/LICENSE", Modules: []Module{
			{Path: "github.com/containernetworking/plugins"}, {Path: "go.opentelemetry.io/otel"}, {Path: "github.com/Microsoft/hcsshim"},
		}},
	}}
	if a.LicenceKept("") != nil {
		t.Error("the whole artifact keeps a filter")
	}
	// A path of no Go binary (a script of the module) ships the
	// artifact's own licence alone.
	if k := a.LicenceKept("hack"); k == nil || !k("LICENSE") || k("std@go1.26.8/LICENSE") {
		t.Error("a path placing no Go binary: want the artifact's own licence alone")
	}
	kept := a.LicenceKept("host-local.exe")
	if kept == nil {
		t.Fatal("host-local.exe alone keeps every licence")
	}
	for p, want := range map[string]bool{
		"LICENSE":              true, // the artifact's own
		"std@go1.26.8/LICENSE": true,
		"github.com/containernetworking/plugins/LICENSE": true,
		"go.opentelemetry.io/otel/trace/LICENSE":         true, // nested in otel, a module of its own
		"go.opentelemetry.io/otel/LICENSE":               false,
		"github.com/Microsoft/hcsshim/LICENSE":           false,
		"github.com/Microsoft/hcsshim/cmd/runhcs/NOTICE": false,
	} {
		if got := kept(p); got != want {
			t.Errorf("kept(%s) = %v, want %v", p, got, want)
		}
	}
	if a.LicenceKept("win-bridge.exe")("go.opentelemetry.io/otel/trace/LICENSE") {
		t.Error("win-bridge.exe alone keeps the licence of a module only host-local.exe links")
	}
}

// The copyright files of the C libraries a cgo binary contains go with
// that binary, as its modules' licences do.
func TestLicenceKeptCLibraries(t *testing.T) {
	a := &Artifact{GoBinaries: []GoBinary{
		{Path: "runc", CLibraries: []clibs.Library{{Copyright: "debian/libseccomp-dev/copyright"}, {Copyright: "debian/libc6-dev/copyright"}}},
		{Path: "tool", CLibraries: []clibs.Library{{Copyright: "debian/libc6-dev/copyright"}, {File: "/usr/local/lib/libx.a"}}},
	}}
	kept := a.LicenceKept("tool")
	if kept == nil {
		t.Fatal("tool alone keeps every licence")
	}
	for p, want := range map[string]bool{
		"debian/libc6-dev/copyright":      true,
		"debian/libseccomp-dev/copyright": false,
		"LICENSE":                         true,
	} {
		if got := kept(p); got != want {
			t.Errorf("kept(%s) = %v, want %v", p, got, want)
		}
	}
}
