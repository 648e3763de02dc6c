package image

import (
	"archive/tar"
	"slices"
	"strconv"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// winExported is an entry as Windows exports a layer (hcsshim's
// legacyLayerReader through backuptar.BasicInfoHeader): no '/' after a
// directory's name, its attributes in PAX records.
func winExported(name string, typ byte, attr int) tar.Header {
	h := tar.Header{Name: name, Typeflag: typ, Mode: 0o100000, Format: tar.FormatPAX,
		PAXRecords: map[string]string{"MSWINDOWS.fileattr": strconv.Itoa(attr)}}
	if typ == tar.TypeDir {
		h.Mode = 0o40000
	}
	return h
}

// winHardLinkHdr is a hard link as Windows exports one.
func winHardLinkHdr(name, target string) tar.Header {
	h := winExported(name, tar.TypeLink, 0x20)
	h.Linkname = target
	return h
}

// Windows bases as they come are read: a servercore-like one, whose first
// layer's utility VM hard-links the container's files and whose update
// layer lists UtilityVM, replaces, links and whites out files in it,
// with a layer Docker on Windows wrote above (tombstones, the hives'
// deltas) and one as BuildKit writes them on Linux (util/winlayers: a '/'
// after each directory's name); a nanoserver-like one of a single layer
// without a utility VM; and a first layer whose directories are written
// with a '/', UtilityVM/Files/ among them (the base layer writer creates
// it all the same, where the update layer clones it from).
func TestWindowsBaseViewRealShapes(t *testing.T) {
	d := func(n string) tar.Header { return winExported(n, tar.TypeDir, 0x10) }
	f := func(n string) tar.Header { return winExported(n, tar.TypeReg, 0x20) }
	junction := func(n, to string) tar.Header {
		h := winExported(n, tar.TypeSymlink, 0x2416)
		h.Linkname = to
		h.PAXRecords["MSWINDOWS.mountpoint"] = "1"
		return h
	}
	servercore := layerOfHeaders(t,
		d("Files"), junction("Files/Documents and Settings", `C:\Users`), d("Files/ProgramData"), d("Files/Users"), d("Files/Users/Public"),
		d("Files/Windows"), d("Files/Windows/System32"), d("Files/Windows/System32/config"), f("Files/Windows/System32/config/SOFTWARE"),
		f("Files/Windows/System32/kernel32.dll"), f("Files/Windows/System32/ntdll.dll"), f("Files/Windows/System32/old.dll"), f("Files/Windows/notepad.exe"),
		d("Hives"), f("Hives/DefaultUser_Delta"), f("Hives/Sam_Delta"), f("Hives/Security_Delta"), f("Hives/Software_Delta"), f("Hives/System_Delta"),
		d("UtilityVM"), d("UtilityVM/Files"), d("UtilityVM/Files/EFI"), d("UtilityVM/Files/EFI/Microsoft"), d("UtilityVM/Files/EFI/Microsoft/Boot"),
		f("UtilityVM/Files/EFI/Microsoft/Boot/BCD"), d("UtilityVM/Files/Windows"), d("UtilityVM/Files/Windows/System32"),
		winHardLinkHdr("UtilityVM/Files/Windows/System32/kernel32.dll", "Files/Windows/System32/kernel32.dll"),
		winHardLinkHdr("UtilityVM/Files/Windows/System32/ntdll.dll", "Files/Windows/System32/ntdll.dll"),
		f("UtilityVM/Files/Windows/System32/vmonly.dll"))
	update := layerOfHeaders(t,
		d("Files"), d("Files/Windows"), d("Files/Windows/System32"), tar.Header{Name: "Files/Windows/System32/.wh.old.dll", Typeflag: tar.TypeReg},
		f("Files/Windows/System32/kernel32.dll"), f("Files/Windows/System32/new.dll"),
		d("Hives"), f("Hives/DefaultUser_Delta"), f("Hives/Software_Delta"), f("Hives/System_Delta"),
		d("UtilityVM"), d("UtilityVM/Files"), d("UtilityVM/Files/EFI"), d("UtilityVM/Files/EFI/Microsoft"), d("UtilityVM/Files/EFI/Microsoft/Boot"),
		f("UtilityVM/Files/EFI/Microsoft/Boot/BCD"), d("UtilityVM/Files/Windows"), d("UtilityVM/Files/Windows/System32"),
		winHardLinkHdr("UtilityVM/Files/Windows/System32/kernel32.dll", "Files/Windows/System32/kernel32.dll"),
		f("UtilityVM/Files/Windows/System32/ntdll.dll"), winHardLinkHdr("UtilityVM/Files/Windows/System32/new.dll", "Files/Windows/System32/new.dll"),
		tar.Header{Name: "UtilityVM/Files/Windows/System32/.wh.vmonly.dll", Typeflag: tar.TypeReg})
	docker := layerOfHeaders(t,
		d("Files"), d("Files/app"), f("Files/app/app.exe"), winHardLinkHdr("Files/app/app2.exe", "Files/app/app.exe"),
		d("Files/Windows"), tar.Header{Name: "Files/Windows/.wh.notepad.exe", Typeflag: tar.TypeReg},
		d("Hives"), f("Hives/DefaultUser_Delta"), f("Hives/Sam_Delta"), f("Hives/Security_Delta"), f("Hives/Software_Delta"), f("Hives/System_Delta"))
	// BuildKit (util/winlayers) and tar writers on Linux: '/' after a
	// directory's name.
	slashed := tarLayer(t, "Hives/", "Files/", "Files/tools/", "Files/tools/t.exe", "Files/tools/t2.exe=>Files/tools/t.exe",
		"Files/app/", "Files/app/.wh.app2.exe", "Files/Windows/", "Files/Windows/System32/", "Files/Windows/System32/x.dll")
	nanoserver := tarLayer(t, "Files/", "Files/Windows/", "Files/Windows/System32/", "Files/Windows/System32/cmd.exe", "Hives/", "Hives/System_Delta")
	slashedUVM := tarLayer(t, "Files/", "Files/Windows/", "Files/Windows/a.dll", "Hives/", "UtilityVM/", "UtilityVM/Files/", "UtilityVM/Files/a.dll=>Files/Windows/a.dll")
	slashedUVMUpdate := layerOfHeaders(t, d("Files"), d("Hives"), d("UtilityVM"), d("UtilityVM/Files"), f("UtilityVM/Files/b.dll"),
		winHardLinkHdr("UtilityVM/Files/c.dll", "UtilityVM/Files/a.dll"), winHardLinkHdr("UtilityVM/Files/d.dll", "Files/Windows/a.dll"))

	for _, c := range []struct {
		name   string
		layers []v1.Layer
		files  []string
	}{
		{"servercore", []v1.Layer{servercore, update}, []string{"Windows/System32/config/SOFTWARE", "Windows/System32/kernel32.dll", "Windows/System32/new.dll", "Windows/System32/ntdll.dll", "Windows/notepad.exe"}},
		{"servercore and docker", []v1.Layer{servercore, update, docker}, []string{"Windows/System32/config/SOFTWARE", "Windows/System32/kernel32.dll", "Windows/System32/new.dll", "Windows/System32/ntdll.dll", "app/app.exe", "app/app2.exe"}},
		{"servercore, docker, slashed", []v1.Layer{servercore, update, docker, slashed}, []string{"Windows/System32/config/SOFTWARE", "Windows/System32/kernel32.dll", "Windows/System32/new.dll", "Windows/System32/ntdll.dll", "Windows/System32/x.dll", "app/app.exe", "tools/t.exe", "tools/t2.exe"}},
		{"nanoserver", []v1.Layer{nanoserver}, []string{"Windows/System32/cmd.exe"}},
		{"nanoserver, slashed", []v1.Layer{nanoserver, tarLayer(t, "Hives/", "Files/", "Files/tools/", "Files/tools/t.exe", "Files/tools/t2.exe=>Files/tools/t.exe")}, []string{"Windows/System32/cmd.exe", "tools/t.exe", "tools/t2.exe"}},
		{"a slashed first layer with a utility VM", []v1.Layer{slashedUVM, slashedUVMUpdate}, []string{"Windows/a.dll"}},
	} {
		v, err := WindowsBaseView(imageOf(t, c.layers...), 1<<30, 0)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := sortedKeys(v.Files); !slices.Equal(got, c.files) {
			t.Errorf("%s: files\n %q\nwant\n %q", c.name, got, c.files)
		}
	}
}
