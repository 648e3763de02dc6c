package main

import (
	"archive/tar"
	"bytes"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// hostProcessLikeBase writes at dir an OCI layout holding a Windows base
// shaped like Microsoft's host-process base: one plain tar layer of
// Files/ entries, hives under Files/Windows/System32/config, no Hives/.
func hostProcessLikeBase(t *testing.T, dir string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"Files/", "Files/Windows/", "Files/Windows/System32/", "Files/Windows/System32/config/", "Files/License/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"Files/Windows/System32/config/SAM", "Files/Windows/System32/config/SYSTEM", "Files/License/LICENSE"} {
		if err := tw.WriteHeader(&tar.Header{Name: f, Typeflag: tar.TypeReg, Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	windowsBaseOf(t, dir, buf.Bytes(), `c:\windows\system32\cmd.exe`)
}

// layerNames lists the entries of each layer of img above the base's
// baseLayers, one string per layer.
func layerNames(t *testing.T, img v1.Image, baseLayers int) []string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range layers[baseLayers:] {
		var names []string
		walkLayer(t, l, func(h *tar.Header, _ io.Reader) {
			if h.Typeflag == tar.TypeReg {
				names = append(names, h.Name)
			}
		})
		slices.Sort(names)
		out = append(out, strings.Join(names, " "))
	}
	return out
}

// TestDockerfileWindowsCopyIntoDirectory builds Windows stages whose
// COPY names, without a trailing \, a directory the base or an earlier
// COPY holds, in any case: the file goes into it, as BuildKit copies it,
// and never becomes a file that hides the directory on Windows (which
// the independent reader, checkWindowsLayout, refuses).
func TestDockerfileWindowsCopyIntoDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.txt"), "f\n")
	writeFile(t, filepath.Join(dir, "g"), "g\n")
	writeFile(t, filepath.Join(dir, "d", "x"), "x\n")
	hostProcessLikeBase(t, filepath.Join(dir, "hpc"))
	cases := []struct {
		name, df string
		want     []string
	}{
		{"the built-in base's System32", "FROM windows-hostprocess-scratch\nCOPY f.txt C:\\Windows\\System32\n",
			[]string{"Files/Windows/System32/f.txt"}},
		{"the built-in base's System32, in another case", "FROM windows-hostprocess-scratch\nCOPY f.txt c:\\windows\\system32\n",
			[]string{"Files/Windows/System32/f.txt"}},
		{"a directory an earlier COPY made, in another case", "FROM windows-hostprocess-scratch\nCOPY d C:\\k\\Data\\\nCOPY g C:\\K\nCOPY f.txt C:\\k\\data\n",
			[]string{"Files/k/Data/x", "Files/k/g", "Files/k/Data/f.txt"}},
		{"an OCI base shaped like the host-process base", "FROM --platform=windows/amd64 oci:hpc\nCOPY f.txt c:\\windows\\SYSTEM32\nCOPY g C:\\License\n",
			[]string{"Files/Windows/System32/f.txt", "Files/License/g"}},
		{"a name no base directory has stays the file's", "FROM --platform=windows/amd64 oci:hpc\nCOPY f.txt C:\\Windows\\notes.txt\n",
			[]string{"Files/Windows/notes.txt"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			df := filepath.Join(dir, "Dockerfile."+string(rune('a'+i)))
			writeFile(t, df, "# escape=`\n"+tc.df)
			// Twice: the second build reads the base's view from the
			// cache.
			for range 2 {
				out := filepath.Join(t.TempDir(), "out")
				mustPallet(t, "build", "-q", "--platform", "windows/amd64", "-f", df, "-o", "oci:"+out)
				checkWindowsLayout(t, out, "")
				if got := layerNames(t, dfImage(t, out), 1); !slices.Equal(got, tc.want) {
					t.Errorf("layers hold\n %q\nwant\n %q", got, tc.want)
				}
			}
		})
	}
}

// TestDockerfileWindowsForeignBase checks what a file copied to a name
// without a trailing \ becomes on a base whose foreign layers pallet
// does not download: the system's directories, which every Windows image
// holds, are directories it goes into (a file named System32 would hide
// it), and any other name is the file's new name, as the line says.
func TestDockerfileWindowsForeignBase(t *testing.T) {
	dir := t.TempDir()
	windowsBase(t, filepath.Join(dir, "nano"), "10.0.20348.2582")
	writeFile(t, filepath.Join(dir, "f.txt"), "f\n")
	df := filepath.Join(dir, "Dockerfile")
	writeFile(t, df, "# escape=`\nFROM --platform=windows/amd64 oci:nano\nCOPY f.txt C:\\windows\\system32\nCOPY f.txt C:\\app\\svc.exe\n")
	o := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "--no-cache", "-f", df, "-o", "oci:"+o)
	checkWindowsLayout(t, o, "10.0.20348.2582")
	if got := layerNames(t, dfImage(t, o), 1); !slices.Equal(got, []string{"Files/Windows/System32/f.txt", "Files/app/svc.exe"}) {
		t.Errorf("layers hold %q", got)
	}
	// A recipe's file placed at a system directory's name is refused, as
	// on a base pallet reads.
	writeFile(t, filepath.Join(dir, "pallet.yaml"), "version: 1\nartifacts:\n  f:\n    local: {path: f.txt}\nimages:\n  app:\n    base: oci:nano\n    platforms: [windows/amd64]\n    files:\n      - artifact: f\n        dest: /windows/system32\n")
	if _, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+filepath.Join(t.TempDir(), "out")); err == nil || !strings.Contains(err.Error(), "holds the directory /Windows/System32") {
		t.Fatalf("want the file over System32 refused, got %v", err)
	}
	// A directory copied where the base holds a file (a hive) is
	// refused at its line too.
	writeFile(t, filepath.Join(dir, "d", "x"), "x\n")
	hostProcessLikeBase(t, filepath.Join(dir, "hpc"))
	writeFile(t, df, "# escape=`\nFROM --platform=windows/amd64 oci:hpc\nCOPY d C:\\windows\\system32\\config\\sam\\\n")
	if _, err := pallet(t, "build", "-q", "-f", df, "-o", "oci:"+filepath.Join(t.TempDir(), "out")); err == nil || !strings.Contains(err.Error(), "holds a file") || !strings.Contains(err.Error(), "Dockerfile:3") {
		t.Fatalf("want the directory over the base's file refused at its line, got %v", err)
	}
	// With a trailing \ it goes into the directory; named with its own
	// name, it is that file.
	writeFile(t, df, "# escape=`\nFROM --platform=windows/amd64 oci:nano\nCOPY f.txt C:\\Windows\\System32\\\nCOPY f.txt C:\\app\\F.TXT\n")
	o = filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "--no-cache", "-f", df, "-o", "oci:"+o)
	checkWindowsLayout(t, o, "10.0.20348.2582")
	if got := layerNames(t, dfImage(t, o), 1); !slices.Equal(got, []string{"Files/Windows/System32/f.txt", "Files/app/F.TXT"}) {
		t.Errorf("layers hold %q", got)
	}
}

// TestWindowsRecipeFileOverBaseDirectory checks what recipe.md promises
// on Windows too: a file placed with a dest without a trailing / is that
// name, and where the base holds a directory there (in any case) it is
// refused, not written over it (on Windows a file named System32 hides
// the directory); with a trailing / it goes into it.
func TestWindowsRecipeFileOverBaseDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.txt"), "f\n")
	hostProcessLikeBase(t, filepath.Join(dir, "hpc"))
	for _, base := range []string{"windows-hostprocess-scratch", "oci:hpc"} {
		recipe := func(dest string) string {
			return "version: 1\nartifacts:\n  f:\n    local: {path: f.txt}\nimages:\n  app:\n    base: " + base + "\n    platforms: [windows/amd64]\n    files:\n      - artifact: f\n        dest: " + dest + "\n"
		}
		writeFile(t, filepath.Join(dir, "pallet.yaml"), recipe("/windows/system32"))
		_, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
		if err == nil || !strings.Contains(err.Error(), "holds the directory /Windows/System32") || !strings.Contains(err.Error(), "pallet.yaml:10") {
			t.Fatalf("%s: want the file over System32 refused at its line, got %v", base, err)
		}
		writeFile(t, filepath.Join(dir, "pallet.yaml"), recipe("/Windows/System32/"))
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
		checkWindowsLayout(t, out, "")
		if got := layerNames(t, dfImage(t, out), 1); !slices.Equal(got, []string{"Files/Windows/System32/f.txt"}) {
			t.Errorf("%s: layers hold %q", base, got)
		}
	}
}
