package dockerfile

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/plan"
)

// write makes a build context from files (path → content; a path ending
// in / is a directory) and returns the Dockerfile's path.
func write(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "Dockerfile")
}

func planFiles(t *testing.T, files map[string]string, opt Options) (*plan.Plan, error) {
	t.Helper()
	d, err := Load(write(t, files))
	if err != nil {
		return nil, err
	}
	return d.Plan(opt)
}

func mustPlan(t *testing.T, files map[string]string, opt Options) *plan.Plan {
	t.Helper()
	p, err := planFiles(t, files, opt)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return p
}

// placements describes the layers of the only platform of p's image, one
// line per layer: "dest<-what" for each placement, what being the
// artifact's kind and source relative to the context.
func placements(t *testing.T, p *plan.Plan) []string {
	t.Helper()
	if len(p.Images) != 1 || len(p.Images[0].Platforms) != 1 {
		t.Fatalf("want one image on one platform, got %d images", len(p.Images))
	}
	dir := filepath.Dir(p.Source)
	real, _ := filepath.EvalSymlinks(dir)
	var out []string
	for _, l := range p.Images[0].Platforms[0].Layers {
		var parts []string
		for _, pm := range l.Placements {
			a := p.Artifacts[pm.Artifact]
			what := ""
			switch k := a.Kind.(type) {
			case *artifact.Local:
				rel, _ := filepath.Rel(real, k.Path)
				what = "local:" + filepath.ToSlash(rel)
				if k.Extract != nil {
					what = "unpack:" + filepath.ToSlash(rel)
				}
			case *localDir:
				rel, _ := filepath.Rel(real, k.Path)
				what = "filtered:" + filepath.ToSlash(rel)
				if k.filter.keep != nil {
					// A pattern's files in one directory (groupFiles).
					what = "files:" + filepath.ToSlash(rel) + "[" + strings.Join(pm.Shows, " ") + "]"
				}
			case *artifact.URL:
				what = "url:" + k.URL
				if k.Extract != nil {
					what = "unpack-url:" + k.URL
				}
			case emptyDir:
				what = "mkdir"
			}
			s := pm.Dest + "<-" + what
			if pm.IntoDirAs != "" {
				s = pm.Dest + " into=" + pm.IntoDirAs + "<-" + what
			}
			if pm.Mode != 0 {
				s += fmt.Sprintf(" mode=%o", pm.Mode.Perm())
			}
			if pm.UID != 0 || pm.GID != 0 {
				s += fmt.Sprintf(" owner=%d:%d", pm.UID, pm.GID)
			}
			parts = append(parts, s)
		}
		out = append(out, strings.Join(parts, ", "))
	}
	return out
}

// placementCase is a Dockerfile's lines and the placements of its layers
// (see placements), or the error it gives.
type placementCase struct {
	name, df string
	want     []string
	err      string
}

// checkPlacements plans each case's Dockerfile, prefix then df, in a
// context holding files.
func checkPlacements(t *testing.T, files map[string]string, prefix string, cases []placementCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := map[string]string{"Dockerfile": prefix + tc.df + "\n"}
			for k, v := range files {
				fs[k] = v
			}
			p := planCase(t, fs, Options{}, tc.err)
			if p == nil {
				return
			}
			if got := placements(t, p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("layers\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// planCase plans fs, and checks its error against wantErr ("" for none):
// it returns the plan when there is one to look at.
func planCase(t *testing.T, fs map[string]string, opt Options, wantErr string) *plan.Plan {
	t.Helper()
	p, err := planFiles(t, fs, opt)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want %q", err, wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func located(t *testing.T, err error) *plan.Error {
	t.Helper()
	var pe *plan.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) has no position", err, err)
	}
	return pe
}

func TestDockerfileNames(t *testing.T) {
	for name, want := range map[string]bool{
		"Dockerfile": true, "dir/Dockerfile": true, "dockerfile": true, "app.Dockerfile": true,
		"Dockerfile.windows": true, "pallet.yaml": false, "Dockerfile.dockerignore": false,
		"Dockerfiles/pallet.yaml": false, "notaDockerfile": false,
		"Containerfile": true, "app.Containerfile": true, "Containerfile.prod": true, "Containerfile.containerignore": false,
	} {
		if got := IsDockerfile(name); got != want {
			t.Errorf("IsDockerfile(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestDockerfileCopyPlacements(t *testing.T) {
	base := map[string]string{
		"bin/hello": "hello", "bin/tool": "tool", "etc/a.conf": "a", "etc/sub/b.conf": "b",
		"notes.txt": "n", "more.txt": "m",
	}
	tests := []struct {
		name string
		df   string
		want []string
	}{
		{"file into a directory", "COPY bin/hello /usr/bin/", []string{"/usr/bin/<-local:bin/hello"}},
		{"file renamed", "COPY bin/hello /usr/bin/hi", []string{"/usr/bin/hi<-local:bin/hello"}},
		{"directory content", "COPY etc /etc/app", []string{"/etc/app/<-local:etc"}},
		{"context root", "COPY . /src/", []string{"/src/<-local:."}},
		{"several sources, one layer", "COPY bin/hello bin/tool /bin/", []string{"/bin/<-local:bin/hello, /bin/<-local:bin/tool"}},
		{"pattern", "COPY *.txt /doc/", []string{"/doc/<-files:.[more.txt notes.txt]"}},
		{"patterns that overlap copy a file once, as BuildKit copies it twice", "COPY *.txt n*.txt /doc/", []string{"/doc/<-files:.[more.txt notes.txt]"}},
		{"a pattern's files in one directory are one artifact, its directories their own, in order", "COPY [bmn]* /x/", []string{"/x/<-local:bin, /x/<-files:.[more.txt notes.txt]"}},
		{"files of several directories, a group each", "COPY */* /x/", []string{"/x/<-files:bin[bin-hello bin-tool], /x/<-local:etc/a.conf, /x/<-local:etc/sub"}},
		{"a COPY --from takes a group's files one by one, as they were placed, but one a later COPY replaced", "FROM scratch AS a\nCOPY *.txt /d/\nCOPY bin/hello /d/more.txt\nFROM scratch\nCOPY --from=a /d /x/", []string{"/x/notes.txt<-local:notes.txt, /x/more.txt<-local:bin/hello"}},
		{"the same, the other way round", "COPY n*.txt *.txt /doc/", []string{"/doc/<-local:notes.txt, /doc/<-local:more.txt"}},
		{"a pattern's files one by one into a name that is no directory", "COPY *.txt /doc", []string{"/doc<-local:notes.txt"}},
		{"and a directory and a pattern over it", "COPY bin b* /x/", []string{"/x/<-local:bin"}},
		{"pattern matching nothing", "COPY *.md /doc/\nCOPY bin/hello /", []string{"/<-local:bin/hello"}},
		{"one layer per COPY", "COPY bin/hello /a/\nCOPY bin/hello /b/", []string{"/a/<-local:bin/hello", "/b/<-local:bin/hello"}},
		{"chmod and chown", "COPY --chmod=0755 --chown=10:20 bin/hello /usr/bin/", []string{"/usr/bin/<-local:bin/hello mode=755 owner=10:20"}},
		{"chown uid alone is also the gid", "COPY --chown=7 bin/hello /", []string{"/<-local:bin/hello owner=7:7"}},
		{"relative destination under WORKDIR", "WORKDIR /app\nCOPY bin/hello .\nCOPY etc conf/", []string{"/app/<-mkdir", "/app/<-local:bin/hello", "/app/conf/<-local:etc"}},
		{"destination that is a directory of the stage", "COPY etc /etc/app/\nCOPY bin/hello /etc/app", []string{"/etc/app/<-local:etc", "/etc/app/<-local:bin/hello"}},
		{"the working directory of an image base, as a directory", "FROM example.com/base\nWORKDIR /app\nCOPY bin/hello .", []string{"/app/<-local:bin/hello"}},
		{"dot-dot stays in the context", "COPY ../../bin/hello /", []string{"/<-local:bin/hello"}},
		{"variables", "ARG D=/opt\nENV F=hello\nCOPY bin/$F ${D}/", []string{"/opt/<-local:bin/hello"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			df := tc.df
			if !strings.HasPrefix(df, "FROM") {
				df = "FROM scratch\n" + df
			}
			files := map[string]string{"Dockerfile": df + "\n"}
			for k, v := range base {
				files[k] = v
			}
			p := mustPlan(t, files, Options{})
			if got := placements(t, p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("layers\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestDockerfileAdd(t *testing.T) {
	var tgz, plainTar bytes.Buffer
	writeTar := func(w *tar.Writer) {
		w.WriteHeader(&tar.Header{Name: "x/y", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
		w.Write([]byte("y"))
		w.Close()
	}
	gz := gzip.NewWriter(&tgz)
	writeTar(tar.NewWriter(gz))
	gz.Close()
	writeTar(tar.NewWriter(&plainTar))
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	f, _ := zw.Create("z")
	f.Write([]byte("z"))
	zw.Close()
	var gzText bytes.Buffer
	gz = gzip.NewWriter(&gzText)
	gz.Write([]byte("just text, gzipped"))
	gz.Close()

	files := map[string]string{"a.tar.gz": tgz.String(), "a.tar": plainTar.String(), "a.zip": zipped.String(),
		"notes.txt.gz": gzText.String(), "renamed.bin": tgz.String(), "dir/a.tar": plainTar.String()}
	sum := strings.Repeat("ab", 32)
	tests := []placementCase{
		{"a local tar.gz is unpacked", "ADD a.tar.gz /opt/", []string{"/opt/<-unpack:a.tar.gz"}, ""},
		{"into its destination even without /", "ADD a.tar /opt", []string{"/opt/<-unpack:a.tar"}, ""},
		{"--unpack=false copies it", "ADD --unpack=false a.tar /opt/", []string{"/opt/<-local:a.tar"}, ""},
		{"a zip is copied as it is, as Docker does", "ADD a.zip /opt/", []string{"/opt/<-local:a.zip"}, ""},
		{"a gzipped file that is no tar is copied", "ADD notes.txt.gz /doc/", []string{"/doc/<-local:notes.txt.gz"}, ""},
		{"an archive in a directory is not unpacked", "ADD dir /d/", []string{"/d/<-local:dir"}, ""},
		{"a URL with its checksum", "ADD --checksum=sha256:" + sum + " https://example.com/dl/tool.bin /usr/bin/", []string{"/usr/bin/<-url:https://example.com/dl/tool.bin mode=600"}, ""},
		{"a URL renamed, chmod wins over 0600", "ADD --chmod=755 --checksum=sha256:" + sum + " https://example.com/dl/tool.bin /usr/bin/tool", []string{"/usr/bin/tool<-url:https://example.com/dl/tool.bin mode=755"}, ""},
		{"--chmod does not reach an unpacked archive's files, as in BuildKit", "ADD --chmod=755 --chown=5:6 a.tar.gz /opt/", []string{"/opt/<-unpack:a.tar.gz owner=5:6"}, ""},
		{"nor a downloaded one's", "ADD --chmod=755 --unpack=true --checksum=sha256:" + sum + " https://example.com/t.tar.gz /opt/", []string{"/opt/<-unpack-url:https://example.com/t.tar.gz"}, ""},
		{"a URL unpacked", "ADD --unpack=true --checksum=sha256:" + sum + " https://example.com/t.tar.gz /opt/", []string{"/opt/<-unpack-url:https://example.com/t.tar.gz"}, ""},
		{"a zip URL is not unpacked, and the error says what unpacks it", "ADD --unpack=true --checksum=sha256:" + sum + " https://example.com/ovs.zip /", nil, "not a zip, as in BuildKit: unzip it before the build and COPY the directory, or use a url artifact with extract"},
		{"a URL without checksum", "ADD https://example.com/dl/tool.bin /usr/bin/", nil, "ADD: https://example.com/dl/tool.bin: a download needs --checksum=sha256"},
		{"a checksum that is not sha256", "ADD --checksum=sha512:abc https://example.com/x /x", nil, "want sha256:"},
		{"COPY of a URL", "COPY https://example.com/x /x", nil, "COPY does not download; use ADD"},
		{"a git repository", "ADD https://github.com/org/repo.git /src", nil, "git sources are not supported"},
		{"an archive misnamed", "ADD renamed.bin /opt/", nil, "rename it to end in .tar.gz"},
	}
	checkPlacements(t, files, "FROM scratch\n", tests)
}

// ADD unpacks a local bzip2 tar, as BuildKit's DecompressStream knows
// bzip2 by its first bytes; pallet goes by the name, so one named
// otherwise is refused saying the name to give. A bzip2 file that holds
// no tar, or a text that starts "BZh", is copied, as BuildKit copies it.
func TestDockerfileAddBzip2(t *testing.T) {
	bz := string(fixture.TarBz2(t, []fixture.File{{Name: "x/y", Content: "y"}}))
	files := map[string]string{"a.tar.bz2": bz, "a.tbz": bz, "renamed.bin": bz,
		"notes.txt.bz2": string(fixture.Bzip2(t, []byte("just text, bzip2ed"))), "bzh.txt": "BZhello, world\n"}
	sum := strings.Repeat("ab", 32)
	checkPlacements(t, files, "FROM scratch\n", []placementCase{
		{"a local tar.bz2 is unpacked", "ADD a.tar.bz2 /opt/", []string{"/opt/<-unpack:a.tar.bz2"}, ""},
		{"and a .tbz", "ADD a.tbz /opt/", []string{"/opt/<-unpack:a.tbz"}, ""},
		{"a bzip2 file that is no tar is copied", "ADD notes.txt.bz2 /doc/", []string{"/doc/<-local:notes.txt.bz2"}, ""},
		{"a text starting BZh is copied", "ADD bzh.txt /doc/", []string{"/doc/<-local:bzh.txt"}, ""},
		{"a bzip2 archive misnamed", "ADD renamed.bin /opt/", nil, "a tar.bz2 archive whose name does not say so; pallet unpacks archives by name: rename it to end in .tar.bz2"},
		{"a URL unpacked", "ADD --unpack=true --checksum=sha256:" + sum + " https://example.com/busybox.tar.bz2 /opt/", []string{"/opt/<-unpack-url:https://example.com/busybox.tar.bz2"}, ""},
	})
}

// A tar whose first header comes after more than the sniff's 1 MiB of
// long-name records (GNU tar's 'L' and 'K', each within archive/tar's
// 1 MiB) is still a tar to BuildKit, whose check reads as far as the
// header: ADD unpacks it, plain or bzip2ed, where the sniff ran out of
// bytes and copied it as a file.
func TestDockerfileAddLongFirstHeader(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	long := strings.Repeat("d/", 300<<10) + "x"
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: long, Linkname: long, Format: tar.FormatGNU}); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() <= 1<<20 {
		t.Fatalf("the tar is %d bytes, not past the sniff's 1 MiB", buf.Len())
	}
	if _, err := tar.NewReader(bytes.NewReader(buf.Bytes())).Next(); err != nil {
		t.Fatalf("archive/tar (BuildKit's check) refuses the tar: %v", err)
	}
	checkPlacements(t, map[string]string{"long.tar": buf.String(), "long.tar.bz2": string(fixture.Bzip2(t, buf.Bytes()))}, "FROM scratch\n", []placementCase{
		{"plain", "ADD long.tar /opt/", []string{"/opt/<-unpack:long.tar"}, ""},
		{"bzip2", "ADD long.tar.bz2 /opt/", []string{"/opt/<-unpack:long.tar.bz2"}, ""},
	})
}

// A tar.zst whose frame asks a 128 MiB window (zstd --long=27) is
// unpacked by ADD, as unpacking allows that window: the sniff took it for
// no archive (its decoder allowed 64 MiB) and copied it.
func TestDockerfileAddZstdLongWindow(t *testing.T) {
	data := fixture.Tar([]fixture.File{{Name: "x/y", Content: "y"}})
	// A frame with no content size whose window descriptor says 2^27
	// (exponent 17), holding the tar in one raw block, the last.
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 17 << 3}
	h := uint32(len(data))<<3 | 1
	frame = append(append(frame, byte(h), byte(h>>8), byte(h>>16)), data...)
	checkPlacements(t, map[string]string{"long.tar.zst": string(frame)}, "FROM scratch\n", []placementCase{
		{"unpacked", "ADD long.tar.zst /opt/", []string{"/opt/<-unpack:long.tar.zst"}, ""},
	})
}

func TestDockerfileURLArtifact(t *testing.T) {
	sum := strings.Repeat("0f", 32)
	p := mustPlan(t, map[string]string{"Dockerfile": "FROM scratch\nADD --checksum=sha256:" + sum + " https://example.com/a/cni.tgz?x=1 /opt/\n"}, Options{})
	a := p.Artifacts["cni.tgz@linux/amd64"]
	if a == nil {
		t.Fatalf("artifacts %v", p.Keys())
	}
	u := a.Kind.(*artifact.URL)
	if u.SHA256 != sum || u.Filename != "cni.tgz" || u.Extract != nil || !a.NoLicense {
		t.Errorf("url artifact %+v, request %+v", u, a.Request)
	}
}

// tarOf is a plain tar archive holding one-byte files.
func tarOf(t testing.TB, names ...string) string {
	t.Helper()
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for _, n := range names {
		if err := w.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("x"))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A symlink named as a source is followed, inside the context only.
func TestDockerfileSymlinkSources(t *testing.T) {
	df := write(t, map[string]string{"real/a": "a", "real/sub/b": "b", "file": "f",
		"Dockerfile": "FROM scratch\nCOPY linkdir /d/\nCOPY linkfile /f/\n"})
	dir := filepath.Dir(df)
	outside := t.TempDir()
	for link, target := range map[string]string{"linkdir": "real", "linkfile": "file", "escape": outside} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Load(df)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The directory's content is that of its target; the file keeps the
	// name it was copied by.
	want := []string{"/d/<-local:real", "/f/<-local:linkfile"}
	if got := placements(t, p); !reflect.DeepEqual(got, want) {
		t.Errorf("layers %q, want %q", got, want)
	}
	if err := os.WriteFile(df, []byte("FROM scratch\nCOPY escape/ /x/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err = Load(df); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Plan(Options{}); err == nil || !strings.Contains(err.Error(), "outside the build context") {
		t.Errorf("a symlink out of the context: %v", err)
	}
}

func TestDockerfileFetchable(t *testing.T) {
	sum := strings.Repeat("12", 32)
	d, err := Load(write(t, map[string]string{"a": "a", "Dockerfile": "FROM scratch\nCOPY a /\nADD --checksum=sha256:" + sum + " https://example.com/x.bin /x\n"}))
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := d.Fetchable(Options{Platforms: []string{"linux/amd64", "linux/arm64"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 || reqs[0].Kind.(*artifact.URL).URL != "https://example.com/x.bin" || reqs[0].Platform.Arch != "amd64" || reqs[1].Platform.Arch != "arm64" {
		t.Errorf("fetchable %+v", reqs)
	}
}

// A link does not carry what the ignore file leaves out into the image:
// BuildKit does not send an ignored path, so nothing reaches it through a
// link either.
func TestDockerfileIgnoredBehindSymlink(t *testing.T) {
	df := write(t, map[string]string{"secret/key": "k", "private.pem": "p", "public/a": "a",
		".dockerignore": "secret\nprivate.pem\n", "Dockerfile": "FROM scratch\n"})
	dir := filepath.Dir(df)
	for link, target := range map[string]string{"linkfile": "private.pem", "linkdir": "secret", "pub": "public"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, src := range []string{"linkfile", "linkdir", "linkdir/key", "linkdir/"} {
		if err := os.WriteFile(df, []byte("FROM scratch\nCOPY "+src+" /x/\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := Load(df)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Plan(Options{}); err == nil || !strings.Contains(err.Error(), "excluded from the build context") {
			t.Errorf("COPY %s: %v, want it excluded", src, err)
		}
	}
	// A pattern skips such a link, and a link to what is sent still works.
	if err := os.WriteFile(df, []byte("FROM scratch\nCOPY link* pub/a /x/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Load(df)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := placements(t, p), []string{"/x/<-local:pub/a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("layers %q, want %q", got, want)
	}
}
