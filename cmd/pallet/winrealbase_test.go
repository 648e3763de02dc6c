package main

import (
	"archive/tar"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// winExportedTar is a layer as Windows exports one (hcsshim's
// legacyLayerReader through backuptar): names without a '/' after a
// directory's, attributes in PAX records; spec is a name, ending in '/'
// for a directory, NAME=>TARGET for a hard link, or a whiteout's name.
func winExportedTar(t *testing.T, spec ...string) []byte {
	var hdrs []*tar.Header
	for _, s := range spec {
		h := &tar.Header{Name: s, Typeflag: tar.TypeReg, Format: tar.FormatPAX, PAXRecords: map[string]string{"MSWINDOWS.fileattr": strconv.Itoa(0x20)}}
		switch name, target, link := strings.Cut(s, "=>"); {
		case link:
			h.Name, h.Typeflag, h.Linkname = name, tar.TypeLink, target
		case s[len(s)-1] == '/':
			h.Name, h.Typeflag, h.Mode = s[:len(s)-1], tar.TypeDir, 0o40755
			h.PAXRecords["MSWINDOWS.fileattr"] = strconv.Itoa(0x10)
		case strings.HasPrefix(path.Base(s), ".wh."):
			h.PAXRecords, h.Format = nil, tar.FormatUnknown
		default:
			h.Size = 3
		}
		hdrs = append(hdrs, h)
	}
	return rawTar(t, hdrs...)
}

// Windows bases as they come are built on: a servercore-like one (a first
// layer whose utility VM hard-links the container's files, and an update
// layer that lists UtilityVM, replaces and links files in it, and whites
// out), with a layer Docker on Windows wrote above (tombstones, the
// hives' deltas) and one as BuildKit writes them (a '/' after each
// directory's name); a nanoserver-like one of a single layer without a
// utility VM; and pallet's own output on the first, as a base again.
func TestWindowsRealBasesBuild(t *testing.T) {
	servercore := winExportedTar(t, "Files/", "Files/ProgramData/", "Files/Users/", "Files/Windows/", "Files/Windows/System32/",
		"Files/Windows/System32/kernel32.dll", "Files/Windows/System32/ntdll.dll", "Files/Windows/System32/old.dll", "Files/Windows/notepad.exe",
		"Hives/", "Hives/DefaultUser_Delta", "Hives/Sam_Delta", "Hives/Security_Delta", "Hives/Software_Delta", "Hives/System_Delta",
		"UtilityVM/", "UtilityVM/Files/", "UtilityVM/Files/EFI/", "UtilityVM/Files/EFI/Microsoft/", "UtilityVM/Files/EFI/Microsoft/Boot/",
		"UtilityVM/Files/EFI/Microsoft/Boot/BCD", "UtilityVM/Files/Windows/", "UtilityVM/Files/Windows/System32/",
		"UtilityVM/Files/Windows/System32/kernel32.dll=>Files/Windows/System32/kernel32.dll",
		"UtilityVM/Files/Windows/System32/ntdll.dll=>Files/Windows/System32/ntdll.dll", "UtilityVM/Files/Windows/System32/vmonly.dll")
	update := winExportedTar(t, "Files/", "Files/Windows/", "Files/Windows/System32/", "Files/Windows/System32/.wh.old.dll",
		"Files/Windows/System32/kernel32.dll", "Files/Windows/System32/new.dll",
		"Hives/", "Hives/DefaultUser_Delta", "Hives/Software_Delta", "Hives/System_Delta",
		"UtilityVM/", "UtilityVM/Files/", "UtilityVM/Files/EFI/", "UtilityVM/Files/EFI/Microsoft/", "UtilityVM/Files/EFI/Microsoft/Boot/",
		"UtilityVM/Files/EFI/Microsoft/Boot/BCD", "UtilityVM/Files/Windows/", "UtilityVM/Files/Windows/System32/",
		"UtilityVM/Files/Windows/System32/kernel32.dll=>Files/Windows/System32/kernel32.dll", "UtilityVM/Files/Windows/System32/ntdll.dll",
		"UtilityVM/Files/Windows/System32/new.dll=>Files/Windows/System32/new.dll", "UtilityVM/Files/Windows/System32/.wh.vmonly.dll")
	docker := winExportedTar(t, "Files/", "Files/app/", "Files/app/app.exe", "Files/app/app2.exe=>Files/app/app.exe",
		"Files/Windows/", "Files/Windows/.wh.notepad.exe",
		"Hives/", "Hives/DefaultUser_Delta", "Hives/Sam_Delta", "Hives/Security_Delta", "Hives/Software_Delta", "Hives/System_Delta")
	reg := func(n string) *tar.Header { return &tar.Header{Name: n, Typeflag: tar.TypeReg, Size: 3} }
	dir := func(n string) *tar.Header { return &tar.Header{Name: n, Typeflag: tar.TypeDir, Mode: 0o755} }
	slashed := rawTar(t, dir("Hives"), dir("Files"), dir("Files/tools/"), reg("Files/tools/t.exe"),
		&tar.Header{Name: "Files/tools/t2.exe", Typeflag: tar.TypeLink, Linkname: "Files/tools/t.exe"},
		dir("Files/app/"), reg("Files/app/.wh.app2.exe"))
	nanoserver := winExportedTar(t, "Files/", "Files/Windows/", "Files/Windows/System32/", "Files/Windows/System32/cmd.exe", "Hives/", "Hives/System_Delta")

	for _, c := range []struct {
		name   string
		layers [][]byte
	}{
		{"servercore", [][]byte{servercore, update}},
		{"servercore, docker, buildkit", [][]byte{servercore, update, docker, slashed}},
		{"nanoserver", [][]byte{nanoserver}},
		{"nanoserver, buildkit", [][]byte{nanoserver, slashed}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sub := t.TempDir()
			windowsLayeredBase(t, filepath.Join(sub, "base"), c.layers)
			writeFile(t, filepath.Join(sub, "app"), "app\n")
			writeFile(t, filepath.Join(sub, "pallet.yaml"), winBaseRecipe)
			out := filepath.Join(sub, "out")
			mustPallet(t, "build", "-q", "-f", filepath.Join(sub, "pallet.yaml"), "-o", "oci:"+out)
			checkWindowsLayoutOnBase(t, out, len(c.layers), "")
			if got := layerNames(t, dfImage(t, out), len(c.layers)); !slices.Equal(got, []string{"Files/App/app"}) {
				t.Errorf("pallet's layer holds %q", got)
			}
			// pallet's output is a base in turn.
			writeFile(t, filepath.Join(sub, "again.yaml"), "version: 1\nartifacts:\n  app:\n    local: {path: app}\n    licenses: none\nimages:\n  again:\n    base: oci:out\n    platforms: [windows/amd64]\n    files:\n      - {artifact: app, dest: /Again/}\n")
			again := filepath.Join(sub, "again")
			mustPallet(t, "build", "-q", "-f", filepath.Join(sub, "again.yaml"), "-o", "oci:"+again)
			checkWindowsLayoutOnBase(t, again, len(c.layers), "")
			if got := layerNames(t, dfImage(t, again), len(c.layers)); !slices.Equal(got, []string{"Files/App/app", "Files/Again/app"}) {
				t.Errorf("the second build's layers hold %q", got)
			}
		})
	}
}
