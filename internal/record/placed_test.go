package record

import "testing"

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
