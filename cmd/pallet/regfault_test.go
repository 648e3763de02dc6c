package main

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// A base pinned by digest whose registry then serves other bytes, for a
// layer or for the manifest itself, is refused naming the recipe line,
// the base and the digest that did not match, and the build's cache
// keeps nothing under the digests the bytes were taken for.
func TestRegistryBaseWrongBytesRefused(t *testing.T) {
	const (
		rightBytes = iota
		wrongLayer
		wrongManifest
	)
	var mode atomic.Int32
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m := mode.Load()
			layer := m == wrongLayer && strings.Contains(r.URL.Path, "/blobs/")
			manifest := m == wrongManifest && strings.Contains(r.URL.Path, "/manifests/")
			if r.Method != http.MethodGet || !layer && !manifest {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			b := rec.Body.Bytes()
			switch {
			case layer && len(b) > 0 && b[0] != '{': // not the config
				b[len(b)/2] ^= 0xff
			case manifest:
				// The same manifest to a JSON reader, other bytes.
				b = []byte(strings.Replace(string(b), `"schemaVersion":2`, `"schemaVersion": 2`, 1))
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			w.Write(b)
		})
	})
	mustPallet(t, "build", "-q", "-f", smallRecipe(t, "scratch", strings.Repeat("base\n", 1000)), "--no-cache", "-o", "registry:"+reg.Host+"/base:1")
	ref, err := name.ParseReference(reg.Host + "/base:1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	ld, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	base := reg.Host + "/base@" + d.String()
	for _, c := range []struct {
		name  string
		mode  int32
		wants []string
	}{
		{"layer", wrongLayer, []string{"pallet.yaml:9", base, "base layer 1 (" + ld.String() + ")", "error verifying sha256 checksum"}},
		{"manifest", wrongManifest, []string{"pallet.yaml:9", base, "does not match requested digest"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mode.Store(c.mode)
			defer mode.Store(rightBytes)
			cache := t.TempDir()
			_, _, err := palletOut(t, "build", "-q", "-f", smallRecipe(t, base, "app\n"), "--cache-dir", cache, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
			if err == nil {
				t.Fatal("the build took the wrong bytes")
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q: %v", w, err)
				}
			}
			filepath.WalkDir(cache, func(p string, e fs.DirEntry, err error) error {
				if err == nil && (strings.Contains(p, ld.Hex) || strings.Contains(p, d.Hex)) {
					t.Errorf("the cache keeps %s", p)
				}
				return nil
			})
		})
	}
	// The same build with the right bytes caches the layer where the
	// check above looks for it.
	cache := t.TempDir()
	mustPallet(t, "build", "-q", "-f", smallRecipe(t, base, "app\n"), "--cache-dir", cache, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	found := false
	filepath.WalkDir(cache, func(p string, e fs.DirEntry, err error) error {
		found = found || strings.Contains(p, ld.Hex)
		return nil
	})
	if !found {
		t.Error("a build with the right bytes keeps no file named by the layer's digest: the check of the cache above proves nothing")
	}
}

// A push of a two-platform image whose registry refuses the second
// platform's manifest, or the index, fails naming the registry, the
// repository and what was refused, leaves every tag where it was (none
// names an index whose children are missing), and the same command run
// again once the registry is well pushes the digest a push that never
// failed does.
func TestPushRefusedManifestLeavesNoTag(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "a\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  a: {local: {path: a.txt}, licenses: none}
images:
  app:
    tags: ["1", latest]
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - artifact: a
        dest: /a.txt
`)
	for _, c := range []struct {
		name string
		// refuse says whether the registry refuses r, the n-th manifest
		// PUT of the push.
		refuse func(r *http.Request, n int32) bool
		want   string
	}{
		{"second platform", func(r *http.Request, n int32) bool {
			return n >= 2 && !strings.Contains(r.Header.Get("Content-Type"), "index")
		}, "manifest sha256:"},
		{"index", func(r *http.Request, n int32) bool {
			return strings.Contains(r.Header.Get("Content-Type"), "index")
		}, "/fault/app@sha256:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var failing atomic.Bool
			var puts atomic.Int32
			failing.Store(true)
			reg := testregistry.Start(t, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/fault/app/manifests/") && failing.Load() && c.refuse(r, puts.Add(1)) {
						http.Error(w, `{"errors":[{"code":"UNKNOWN","message":"storage failed"}]}`, http.StatusInternalServerError)
						return
					}
					h.ServeHTTP(w, r)
				})
			})
			args := []string{"build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "registry:" + reg.Host + "/fault/app"}
			_, _, err := palletOut(t, args...)
			if err == nil {
				t.Fatal("the push succeeded though the registry refused a manifest")
			}
			for _, w := range []string{"push " + reg.Host + "/fault/app:1", c.want, "storage failed"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q: %v", w, err)
				}
			}
			for _, tag := range []string{"1", "latest"} {
				if _, err := remote.Head(mustRef(t, reg.Host+"/fault/app:"+tag)); err == nil {
					t.Errorf("tag %s was set by a push that failed", tag)
				}
			}

			failing.Store(false)
			stdout, stderr, err := palletOut(t, args...)
			if err != nil {
				t.Fatalf("the same push once the registry is well: %v\n%s", err, stderr)
			}
			clean, stderr, err := palletOut(t, "build", "-q", "-f", recipe, "--no-cache", "-o", "registry:"+reg.Host+"/clean/app")
			if err != nil {
				t.Fatalf("a push that never failed: %v\n%s", err, stderr)
			}
			got := digestLine.FindStringSubmatch(strings.TrimSpace(strings.Split(stdout, "\n")[0]))
			want := digestLine.FindStringSubmatch(strings.TrimSpace(strings.Split(clean, "\n")[0]))
			if got == nil || want == nil || got[2] != want[2] {
				t.Fatalf("the push after the failure printed %q, one that never failed %q", stdout, clean)
			}
			for _, tag := range []string{"1", "latest"} {
				idx, err := remote.Index(mustRef(t, reg.Host+"/fault/app:"+tag))
				if err != nil {
					t.Fatal(err)
				}
				if d, err := idx.Digest(); err != nil || d.String() != got[2] {
					t.Errorf("tag %s is %v, the push printed %s", tag, d, got[2])
				}
				if err := validate.Index(idx); err != nil {
					t.Errorf("tag %s does not pull whole: %v", tag, err)
				}
			}
		})
	}
}

// A credential helper that never answers fails each command that reads
// or writes a registry at the bound the command takes, naming the helper:
// a build's push and its base at --stall-timeout, inspect, sbom and index
// create at --download-timeout.
func TestHungCredentialHelperBounded(t *testing.T) {
	reg := testregistry.Start(t, nil)
	mustPallet(t, "build", "-q", "-f", smallRecipe(t, "scratch", "base\n"), "--no-cache", "-o", "registry:"+reg.Host+"/base:1")
	t.Setenv("HOME", t.TempDir())
	cfg := t.TempDir()
	t.Setenv("DOCKER_CONFIG", cfg)
	writeFile(t, filepath.Join(cfg, "config.json"), `{"credHelpers": {"`+reg.Host+`": "hung"}}`)
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "docker-credential-hung"), "#!/bin/sh\nexec sleep 600\n")
	if err := os.Chmod(filepath.Join(bin, "docker-credential-hung"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out := "oci:" + filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"build", "-q", "-f", smallRecipe(t, "scratch", "app\n"), "--no-cache", "--stall-timeout", "1s", "-o", "registry:" + reg.Host + "/app:1"},
		{"build", "-q", "-f", smallRecipe(t, reg.Host+"/base:1", "app\n"), "--no-cache", "--stall-timeout", "1s", "-o", out},
		{"inspect", reg.Host + "/base:1", "--download-timeout", "1s"},
		{"sbom", "registry:" + reg.Host + "/base:1", "--download-timeout", "1s"},
	} {
		done := make(chan error, 1)
		go func() { _, _, err := palletOut(t, args...); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "credential helper docker-credential-hung get: gave no answer in 1s") {
				t.Errorf("pallet %s: %v", strings.Join(args, " "), err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("pallet %s still waits on the helper after 30s", strings.Join(args, " "))
		}
	}
}
