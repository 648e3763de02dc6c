package main

import (
	"archive/tar"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pallet-dev/pallet/internal/layer"
)

// A base whose layer gives System32's descriptor as SDDL only
// (MSWINDOWS.sd, as go-winio wrote it before raw descriptors, and still
// reads where a layer has no MSWINDOWS.rawsd): a file placed into
// System32 makes pallet's layer list it again with that descriptor, where
// it listed it with pallet's own, which lets Users add files to
// C:\Windows\System32. A view of the base a pallet kept that read no
// SDDL (base-view-windows-v6) is not taken for it.
func TestWindowsSDDLOnlyBaseDescriptorKept(t *testing.T) {
	const sys32 = "O:S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464G:SYD:PAI(A;;FA;;;S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464)(A;OICIIO;GA;;;SY)(A;;0x1301bf;;;BA)(A;;0x1200a9;;;BU)"
	want, err := layer.SecurityDescriptorFromSDDL(sys32)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cache := t.TempDir()
	d := func(n, sddl string) *tar.Header {
		h := &tar.Header{Name: n, Typeflag: tar.TypeDir, Mode: 0o755, Format: tar.FormatPAX, PAXRecords: map[string]string{"MSWINDOWS.fileattr": "16"}}
		if sddl != "" {
			h.PAXRecords["MSWINDOWS.sd"] = sddl
		}
		return h
	}
	windowsBaseOf(t, filepath.Join(dir, "base"), rawTar(t, d("Files", ""), d("Files/Windows", sys32), d("Files/Windows/System32", sys32), d("Hives", "")))
	writeFile(t, filepath.Join(dir, "app", "app.dll"), "MZ\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(sdRecipe, "oci:base"))
	build := func() string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", cache, "-o", "oci:"+out)
		crossCheckLayout(t, out, 1)
		return winDirRecords(t, topLayer(t, dfImage(t, out)))["Files/Windows/System32"][0]
	}
	if got := build(); got != base64.StdEncoding.EncodeToString(want) {
		t.Fatalf("System32 carries %.40q..., want the base's SDDL as a descriptor", got)
	}
	// A v6 fact held no descriptor read from SDDL.
	asOlderViewFacts(t, cache, "base-view-windows-v6")
	if got := build(); got != base64.StdEncoding.EncodeToString(want) {
		t.Errorf("with an earlier view fact in the cache, System32 carries %.40q..., want the base's", got)
	}
}
