package main

import (
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

// baseWithConfig is a linux/amd64 image of one small layer whose config
// has env and workdir.
func baseWithConfig(t *testing.T, env []string, workdir, file string) v1.Image {
	t.Helper()
	img, err := mutate.ConfigFile(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON),
		&v1.ConfigFile{OS: "linux", Architecture: "amd64", RootFS: v1.RootFS{Type: "layers"}, Config: v1.Config{Env: env, WorkingDir: workdir}})
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.AppendLayers(img, static.NewLayer(fixture.Tar([]fixture.File{{Name: file, Content: file + "\n", Mode: 0o644}}), types.OCIUncompressedLayer))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// The Dockerfile lines that need a base's config (a variable it does not
// set, an ARG without a value, a relative WORKDIR) build on a registry
// base and on an OCI layout, as with BuildKit, which reads the base's
// config first: they were refused, as pallet did not read it.
func TestDockerfileOnReadBase(t *testing.T) {
	dir := t.TempDir()
	base := baseWithConfig(t, []string{"PATH=/usr/bin:/bin", "V=x"}, "/app", "etc/base")
	reg := testregistry.Start(t, nil)
	ref, err := name.ParseReference(reg.Host + "/base:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, base); err != nil {
		t.Fatal(err)
	}
	lp, err := layout.Write(filepath.Join(dir, "base"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(base); err != nil {
		t.Fatal(err)
	}
	baseDigest, err := base.Digest()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "hello"), "hi\n")
	writeFile(t, filepath.Join(dir, "Dockerfile"), "ARG BASE\nFROM $BASE\nENV PATH=/opt/bin:$PATH\nARG V\nLABEL v=$V\nWORKDIR sub\nCOPY hello .\n")
	for _, b := range []struct{ arg, record string }{
		{reg.Host + "/base:v1", reg.Host + "/base:v1@" + baseDigest.String()},
		{"oci:base", "oci:base"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "Dockerfile"), "--arg", "BASE="+b.arg, "--cache-dir", filepath.Join(dir, "cache"), "-o", "oci:"+out)
		imgs := layoutImages(t, out)
		cf, err := imgs[0].img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"PATH=/opt/bin:/usr/bin:/bin", "V=x"}; !slices.Equal(cf.Config.Env, want) {
			t.Errorf("base %s: env %q, want %q", b.arg, cf.Config.Env, want)
		}
		if cf.Config.Labels["v"] != "x" {
			t.Errorf("base %s: labels %q, want v=x", b.arg, cf.Config.Labels)
		}
		if cf.Config.WorkingDir != "/app/sub" {
			t.Errorf("base %s: workdir %q, want /app/sub", b.arg, cf.Config.WorkingDir)
		}
		var rec record.Build
		readJSON(t, out+".record.json", &rec)
		if len(rec.Images) != 1 || rec.Images[0].Base != b.record {
			t.Fatalf("base %s: record %+v, want base %s", b.arg, rec.Images, b.record)
		}
		if !slices.ContainsFunc(rec.Images[0].Placed, func(p record.Placement) bool { return p.Dest == "/app/sub/" }) {
			t.Errorf("base %s: placed %+v, want in /app/sub/", b.arg, rec.Images[0].Placed)
		}
		// pallet fetch plans as build does, reading the base: it refused
		// these words, so an offline build's mirror could not be filled
		// for a Dockerfile pallet build takes (review r209).
		mustPallet(t, "fetch", "-q", "-f", filepath.Join(dir, "Dockerfile"), "--arg", "BASE="+b.arg, "--mirror", t.TempDir())
	}
}

// The build assembles onto the image whose config the front end read: a
// tag moved between the two reads does not put the image on another base
// than the one its words were expanded with.
func TestDockerfileBaseTagMovedAfterRead(t *testing.T) {
	dir := t.TempDir()
	first := baseWithConfig(t, []string{"V=first"}, "", "etc/first")
	moved := baseWithConfig(t, []string{"V=moved"}, "", "etc/moved")
	var once sync.Once
	var reg *testregistry.Registry
	reg = testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/base/manifests/v1") {
				once.Do(func() {
					ref, _ := name.ParseReference(reg.Host + "/base:v1")
					if err := remote.Write(ref, moved); err != nil {
						t.Error(err)
					}
				})
			}
		})
	})
	ref, err := name.ParseReference(reg.Host + "/base:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, first); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM "+reg.Host+"/base:v1\nARG V\nLABEL v=$V\n")
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "Dockerfile"), "--cache-dir", filepath.Join(dir, "cache"), "-o", "oci:"+out)
	cf, err := layoutImages(t, out)[0].img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	// BuildKit gives a base without PATH its own.
	if cf.Config.Labels["v"] != "first" || !slices.Equal(cf.Config.Env, []string{"V=first", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}) {
		t.Errorf("label %q on env %q: want both of the base read, V=first", cf.Config.Labels["v"], cf.Config.Env)
	}
}

// A base that cannot be read, when a word needs it, is said at its FROM
// line with the reason; a Dockerfile that needs nothing of it is refused
// by the build, as before, not by the front end.
func TestDockerfileBaseUnreadableAtFrom(t *testing.T) {
	dir := t.TempDir()
	reg := testregistry.Start(t, nil)
	df := filepath.Join(dir, "Dockerfile")
	writeFile(t, df, "# base\nFROM "+reg.Host+"/none:v1\nENV PATH=/opt/bin:$PATH\n")
	out, err := pallet(t, "build", "-f", df, "--cache-dir", filepath.Join(dir, "cache"), "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	want := "Dockerfile:2: FROM " + reg.Host + "/none:v1: reading the base image's config for linux/amd64, which $PATH (not set by this Dockerfile) needs: base " + reg.Host + "/none:v1 for linux/amd64: "
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q\n%s", err, want, out)
	}
	writeFile(t, df, "# base\nFROM "+reg.Host+"/none:v1\nENV PATH=/opt/bin:$PATH\n")
	// Offline, a registry base is not asked for.
	_, err = pallet(t, "build", "--offline", "-f", df, "--cache-dir", filepath.Join(dir, "cache"), "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	if want := "Dockerfile:2: FROM " + reg.Host + "/none:v1: reading the base image's config for linux/amd64, which $PATH (not set by this Dockerfile) needs: base " + reg.Host + "/none:v1 is in a registry, and the build is offline"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("offline: error %v, want %q", err, want)
	}
}
