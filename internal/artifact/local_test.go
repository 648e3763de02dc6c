package artifact

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// A local path that is a device has no end to hash or place: it is
// refused at once, named, rather than read for ever.
func TestLocalRefusesDevices(t *testing.T) {
	for _, path := range []string{"/dev/zero", "/dev/null"} {
		l := &Local{Path: path, Extract: &Extract{}} // as an archive: hashed for its key
		if key, ok, err := l.Key(New(), &Request{}); err != nil || ok || key != nil {
			t.Errorf("%s: Key = %v %v %v, want no key", path, key, ok, err)
		}
		_, err := l.Produce(context.Background(), New(), &Request{}, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), path+" is a character device: only files, directories and symlinks can be placed") {
			t.Errorf("%s: got %v", path, err)
		}
	}
}

// filename names a file placed as it is; an archive given at build time
// for a local mode that names one (local: {filename: runc}, --mode
// runc=local:./runc.tar.gz) is unpacked, as any archive given so is, its
// entries under their own names: renamed first, it lost the extension
// that says its format and failed.
func TestLocalFilenameOnlyForAFilePlacedAsItIs(t *testing.T) {
	dir := t.TempDir()
	archive := filepath.Join(dir, "runc.amd64.tar.gz")
	if err := os.WriteFile(archive, fixture.TarGz([]fixture.File{{Name: "runc", Content: "#!/bin/sh\n", Mode: 0o755}}), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "runc.amd64")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{archive: "runc", plain: "runc"} {
		l := LocalArchive(path, nil)
		l.Filename = "runc"
		res, err := l.Produce(context.Background(), New(), &Request{Name: "runc", NoLicense: true}, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var got []string
		for _, e := range res.Tree.Entries() {
			got = append(got, e.Path)
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s: tree holds %q, want [%s]", path, got, want)
		}
	}
}

// A zip by another name (a .jar, .whl, .nupkg) is unpacked when extract
// asks for it, known by its first bytes; a file that is no zip is still
// refused, saying so.
func TestExtractTakesAZipByAnotherName(t *testing.T) {
	dir := t.TempDir()
	jar := filepath.Join(dir, "app.jar")
	if err := os.WriteFile(jar, fixture.Zip([]fixture.File{{Name: "META-INF/MANIFEST.MF", Content: "Manifest-Version: 1.0\n"}, {Name: "com/example/A.class", Content: "\xca\xfe\xba\xbe"}}), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := (&Local{Path: jar, Extract: &Extract{}}).Produce(context.Background(), New(), &Request{Name: "app", NoLicense: true}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range res.Tree.Entries() {
		got = append(got, e.Path)
	}
	want := []string{"META-INF", "META-INF/MANIFEST.MF", "com", "com/example", "com/example/A.class"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("tree holds %q, want %q", got, want)
	}

	notZip := filepath.Join(dir, "app.bin")
	if err := os.WriteFile(notZip, []byte("plain"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = (&Local{Path: notZip, Extract: &Extract{}}).Produce(context.Background(), New(), &Request{Name: "app", NoLicense: true}, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "app.bin: extract is set but the name has no known archive extension") || !strings.Contains(err.Error(), "the file is no zip") {
		t.Errorf("got %v", err)
	}
}

// A .tar.bz2 (.tbz2, .tbz) is unpacked as the other tarballs are, given
// at build time too. One
// whose name says no format is refused, as a gzipped or xz tar so named
// is, saying what the file is and the name that unpacks it.
func TestExtractBzip2(t *testing.T) {
	dir := t.TempDir()
	bz := fixture.TarBz2(t, []fixture.File{{Name: "busybox-1.36.1/", Dir: true, Mode: 0o755}, {Name: "busybox-1.36.1/LICENSE", Content: "GPL-2.0\n"}})
	for _, name := range []string{"busybox-1.36.1.tar.bz2", "busybox-1.36.1.tbz2", "busybox-1.36.1.tbz"} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, bz, 0o644); err != nil {
			t.Fatal(err)
		}
		// Given at build time (--mode busybox=local:PATH), it is an
		// archive by its name, so unpacked.
		if LocalArchive(file, nil).Extract == nil {
			t.Errorf("%s given at build time is placed as a file", name)
		}
		res, err := (&Local{Path: file, Extract: &Extract{Strip: 1}}).Produce(context.Background(), New(), &Request{Name: "busybox", NoLicense: true}, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got []string
		for _, e := range res.Tree.Entries() {
			got = append(got, e.Path)
		}
		if strings.Join(got, " ") != "LICENSE" {
			t.Errorf("%s: tree holds %q", name, got)
		}
	}
	for _, tt := range []struct{ content, want string }{
		{string(bz), "busybox: extract is set but the name has no known archive extension, and the file is bzip2-compressed: a tar so compressed is unpacked named *.tar.bz2"},
		{string(fixture.TarGz(nil)), "busybox: extract is set but the name has no known archive extension, and the file is gzip-compressed: a tar so compressed is unpacked named *.tar.gz"},
	} {
		hidden := filepath.Join(dir, "busybox")
		if err := os.WriteFile(hidden, []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := (&Local{Path: hidden, Extract: &Extract{}}).Produce(context.Background(), New(), &Request{Name: "busybox", NoLicense: true}, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("got %v\nwant %s", err, tt.want)
		}
	}
}

// A licence the recipe names that strip removed (a LICENSE beside the
// top directory, as GNU tar's --strip-components drops it) is said so, on
// the licenses line, with what to do; a name strip did not take says what
// strip removed, where a licence at the top would have been.
func TestStrippedLicenceSaid(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cni.tgz")
	if err := os.WriteFile(file, fixture.TarGz([]fixture.File{
		{Name: "LICENSE", Content: "Apache-2.0\n"},
		{Name: "README.md", Content: "r\n"},
		{Name: "cni-plugins/", Dir: true, Mode: 0o755},
		{Name: "cni-plugins/host-local", Content: "bin\n", Mode: 0o755},
	}), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		licence string
		want    string
	}{
		{"LICENSE", `licence file "LICENSE" not found in the artifact; extract.strip: 1 removed the archive's LICENSE (strip drops every entry above its depth, as GNU tar's --strip-components does): drop strip and place the directory it took off with the placement's path: (path: DIR/), and licenses: [LICENSE] finds it`},
		{"COPYING", `licence file "COPYING" not found in the artifact; extract.strip: 1 removed the archive's files above its depth (LICENSE, README.md), which no name in licenses can reach`},
	} {
		_, err := (&Local{Path: file, Extract: &Extract{Strip: 1}}).Produce(context.Background(), New(), &Request{Name: "cni", Licenses: []string{tc.licence}}, t.TempDir())
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "licenses" || err.Error() != tc.want {
			t.Errorf("licenses: [%s]: got %v\nwant %s, blamed on licenses", tc.licence, err, tc.want)
		}
	}
	// Without strip the same archive gives the licence; with one that
	// removes nothing but directories, the error is as it was.
	if _, err := (&Local{Path: file, Extract: &Extract{}}).Produce(context.Background(), New(), &Request{Name: "cni", Licenses: []string{"LICENSE"}}, t.TempDir()); err != nil {
		t.Errorf("no strip: %v", err)
	}
	dirsOnly := filepath.Join(t.TempDir(), "cni.tgz")
	if err := os.WriteFile(dirsOnly, fixture.TarGz([]fixture.File{
		{Name: "cni-plugins/", Dir: true, Mode: 0o755},
		{Name: "cni-plugins/host-local", Content: "bin\n", Mode: 0o755},
	}), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := (&Local{Path: dirsOnly, Extract: &Extract{Strip: 1}}).Produce(context.Background(), New(), &Request{Name: "cni", Licenses: []string{"LICENSE"}}, t.TempDir())
	if err == nil || err.Error() != `licence file "LICENSE" not found in the artifact` {
		t.Errorf("strip removing directories alone: %v", err)
	}
}

// The files an include lists are kept from what was unpacked in time
// linear in their number: each file was matched against every name, the
// names cleaned again for each file, and 100,000 names held a build for
// minutes. Listing every name costs about what one pattern taking them
// all does.
func TestIncludeOfManyNamesLinear(t *testing.T) {
	const n = 5000
	files := make([]fixture.File, n)
	names := make([]string, n)
	for i := range files {
		files[i] = fixture.File{Name: fmt.Sprintf("d/f%d", i)}
		names[i] = files[i].Name
	}
	tgz := filepath.Join(t.TempDir(), "many.tar")
	if err := os.WriteFile(tgz, fixture.Tar(files), 0o644); err != nil {
		t.Fatal(err)
	}
	produce := func(include []string) time.Duration {
		t.Helper()
		start := time.Now()
		res, err := (&Local{Path: tgz, Extract: &Extract{Include: include}}).Produce(context.Background(), New(), &Request{Name: "many", NoLicense: true}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if got := len(res.Tree.Entries()); got != n+1 {
			t.Fatalf("%d entries placed, want %d files and their directory", got, n)
		}
		return time.Since(start)
	}
	one := produce([]string{"d"})
	every := produce(names)
	if every > 2*one+time.Second {
		t.Errorf("include of the %d names took %s, of one pattern taking them all %s", n, every.Round(time.Millisecond), one.Round(time.Millisecond))
	}
}

// A malformed include pattern is refused once, before the archive is
// unpacked, blamed on include (placed at its recipe line), where Extract
// refused it unblamed (at the artifact's line) and the check after it,
// which prepared the patterns a second time, could not fire.
func TestIncludeRefusedAtItsField(t *testing.T) {
	tgz := filepath.Join(t.TempDir(), "a.tar")
	if err := os.WriteFile(tgz, fixture.Tar([]fixture.File{{Name: "bin/tool", Content: "x"}}), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := (&Local{Path: tgz, Extract: &Extract{Include: []string{"bin/tool", "bin/["}}}).Produce(context.Background(), New(), &Request{Name: "a", NoLicense: true}, t.TempDir())
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "include" || !strings.Contains(err.Error(), `extract `+tgz+`: include pattern "bin/[": syntax error`) {
		t.Errorf("got %v, want a FieldError of include naming the archive and the pattern", err)
	}
}

// The licence patterns an extraction with include adds, which every
// entry is matched against too, count with include's against
// archive.MaxGlobsPerName: 990 include patterns beginning with a
// wildcard and the 20 licence globs are refused, blamed on include and
// saying why; named licences, looked up, or none, add no globs.
func TestLicencePatternsHeldToTheGlobBound(t *testing.T) {
	const n = 990
	files := []fixture.File{{Name: "LICENSE", Content: "l"}}
	include := make([]string, n)
	for i := range include {
		files = append(files, fixture.File{Name: fmt.Sprintf("fx%d", i), Content: "x"})
		include[i] = fmt.Sprintf("*x%d", i)
	}
	tgz := filepath.Join(t.TempDir(), "many.tar")
	if err := os.WriteFile(tgz, fixture.Tar(files), 0o644); err != nil {
		t.Fatal(err)
	}
	produce := func(r *Request) (*Result, error) {
		return (&Local{Path: tgz, Extract: &Extract{Include: include}}).Produce(context.Background(), New(), r, t.TempDir())
	}
	_, err := produce(&Request{Name: "many"})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "include" || !strings.Contains(err.Error(), `include pattern "*x980" with the 20 extra patterns with wildcards that select entries besides makes 1001 that begin with a wildcard`) || !strings.Contains(err.Error(), "licence files") {
		t.Errorf("got %v, want a FieldError of include naming *x980 and the licence patterns", err)
	}
	for _, r := range []*Request{{Name: "many", Licenses: []string{"LICENSE"}}, {Name: "many", NoLicense: true}} {
		res, err := produce(r)
		if err != nil {
			t.Fatalf("licences %q, none %v: %v", r.Licenses, r.NoLicense, err)
		}
		if got := len(res.Tree.Entries()); got != n {
			t.Errorf("licences %q: %d entries placed, want %d", r.Licenses, got, n)
		}
		if _, ok := res.Licenses.Get("LICENSE"); ok == r.NoLicense {
			t.Errorf("licences %q, none %v: LICENSE taken %v", r.Licenses, r.NoLicense, ok)
		}
	}
}
