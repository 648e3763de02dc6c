package image

import (
	"archive/tar"
	"encoding/base64"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/pallet-dev/pallet/internal/layer"
)

// sddlLayer is a Windows layer of directories, each with the PAX records
// given.
func sddlLayer(t *testing.T, dirs map[string]map[string]string, order ...string) v1.Layer {
	t.Helper()
	var hdrs []tar.Header
	for _, name := range order {
		hdrs = append(hdrs, tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755, Format: tar.FormatPAX, PAXRecords: dirs[name]})
	}
	return layerOfHeaders(t, hdrs...)
}

// A base's directory whose descriptor its layer gives as SDDL only
// (MSWINDOWS.sd, as go-winio wrote them before raw descriptors), which
// go-winio reads where there is no MSWINDOWS.rawsd, is held with that
// descriptor, so that a layer listing the directory again keeps it;
// before, the view held none there, and pallet's layer gave the
// directory its own, which lets Users add files. A rawsd, even empty,
// is what go-winio takes over the SDDL; an SDDL pallet cannot read the
// same on every machine gives none.
func TestWindowsBaseViewDescriptorFromSDDL(t *testing.T) {
	const sys32 = "O:SYG:SYD:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)"
	img := imageOf(t, sddlLayer(t, map[string]map[string]string{
		"Files/Windows/":          {"MSWINDOWS.fileattr": "16", "MSWINDOWS.sd": sys32},
		"Files/Windows/System32/": {"MSWINDOWS.fileattr": "22", "MSWINDOWS.sd": sys32},
		"Files/Raw/":              {"MSWINDOWS.fileattr": "16", "MSWINDOWS.sd": sys32, "MSWINDOWS.rawsd": "AAAA"},
		"Files/EmptyRaw/":         {"MSWINDOWS.fileattr": "16", "MSWINDOWS.sd": sys32, "MSWINDOWS.rawsd": ""},
		"Files/Domain/":           {"MSWINDOWS.fileattr": "16", "MSWINDOWS.sd": "O:DAG:DAD:(A;OICI;FA;;;DA)"},
	}, "Files/", "Files/Windows/", "Files/Windows/System32/", "Files/Raw/", "Files/EmptyRaw/", "Files/Domain/"))
	v, err := WindowsBaseView(img, 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := v.WinDirs["Windows/System32"]
	if d == nil {
		t.Fatalf("Windows/System32 holds no descriptor: WinDirs %v", v.WinDirs)
	}
	raw, err := base64.StdEncoding.DecodeString(d.RawSD)
	if err != nil {
		t.Fatal(err)
	}
	info, err := layer.ParseSecurityDescriptor(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.SDDL(); got != sys32 || d.Attr != 22 {
		t.Errorf("Windows/System32: %s attributes %d, want %s and 22", got, d.Attr, sys32)
	}
	if v.WinDirs["Windows"] == nil || v.WinDirs["Windows"].RawSD != d.RawSD {
		t.Errorf("Windows: %v, want the same descriptor", v.WinDirs["Windows"])
	}
	if r := v.WinDirs["Raw"]; r == nil || r.RawSD != "AAAA" {
		t.Errorf("Raw: %v, want its rawsd over its SDDL", r)
	}
	for _, p := range []string{"EmptyRaw", "Domain"} {
		if r := v.WinDirs[p]; r != nil {
			t.Errorf("%s: %+v, want none", p, *r)
		}
	}
}
