package image

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/pallet-dev/pallet/internal/platform"
)

// base returns an image of platform p in the given manifest flavour, with
// a config a pallet image inherits from.
func testBase(t *testing.T, p v1.Platform, mt types.MediaType) v1.Image {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.MediaType(img, mt)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant, cf.OSVersion, cf.OSFeatures = p.OS, p.Architecture, p.Variant, p.OSVersion, p.OSFeatures
	cf.Config.Env = []string{"PATH=/usr/bin", "LANG=C"}
	cf.Config.Cmd = []string{"/bin/sh"}
	cf.Config.Labels = map[string]string{"base": "yes"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func testLayer(t *testing.T) Layer {
	t.Helper()
	l, err := random.Layer(128, types.OCILayer)
	if err != nil {
		t.Fatal(err)
	}
	return Layer{Layer: l, CreatedBy: "pallet: place test /x"}
}

func TestAssemble(t *testing.T) {
	epoch := time.Unix(1700000000, 0).UTC()
	linux := v1.Platform{OS: "linux", Architecture: "amd64"}
	windows := v1.Platform{OS: "windows", Architecture: "amd64"}
	for _, tc := range []struct {
		name      string
		base      v1.Image
		cfg       Config
		layers    int
		createdBy string
		wantLayer types.MediaType
		check     func(t *testing.T, c v1.Config)
		wantErr   string
	}{
		{
			name: "oci base, env merged, cmd kept", base: testBase(t, linux, types.OCIManifestSchema1), layers: 2,
			cfg: Config{Env: []string{"PATH=/opt/bin:/usr/bin", "NEW=1"}, Labels: map[string]string{"app": "x"}, ExposedPorts: []string{"80", "53/udp"}},
			check: func(t *testing.T, c v1.Config) {
				if want := []string{"PATH=/opt/bin:/usr/bin", "LANG=C", "NEW=1"}; !reflect.DeepEqual(c.Env, want) {
					t.Errorf("env %v, want %v", c.Env, want)
				}
				if !reflect.DeepEqual(c.Cmd, []string{"/bin/sh"}) || c.Labels["base"] != "yes" || c.Labels["app"] != "x" {
					t.Errorf("inherited cmd/labels lost: %+v", c)
				}
				if _, ok := c.ExposedPorts["80/tcp"]; !ok {
					t.Errorf("ports %v", c.ExposedPorts)
				}
			},
		},
		{
			// One recipe over a Linux and a Windows base: each platform
			// merges as its OS reads names.
			name: "linux env names keep their case", base: testBase(t, linux, types.OCIManifestSchema1), layers: 1,
			cfg: Config{Env: []string{`Path=C:\k`, "lang=en"}},
			check: func(t *testing.T, c v1.Config) {
				if want := []string{"PATH=/usr/bin", "LANG=C", `Path=C:\k`, "lang=en"}; !reflect.DeepEqual(c.Env, want) {
					t.Errorf("env %v, want %v", c.Env, want)
				}
			},
		},
		{
			name: "windows env names are one variable whatever their case", base: testBase(t, windows, types.OCIManifestSchema1), layers: 1,
			cfg: Config{Env: []string{`Path=C:\k`, "lang=en", "NEW=1", "new=2"}},
			check: func(t *testing.T, c v1.Config) {
				if want := []string{`Path=C:\k`, "lang=en", "new=2"}; !reflect.DeepEqual(c.Env, want) {
					t.Errorf("env %v, want %v", c.Env, want)
				}
			},
		},
		{
			name: "entrypoint drops the base cmd", base: testBase(t, linux, types.OCIManifestSchema1), layers: 1,
			cfg: Config{Entrypoint: []string{"/app"}},
			check: func(t *testing.T, c v1.Config) {
				if c.Cmd != nil || !reflect.DeepEqual(c.Entrypoint, []string{"/app"}) {
					t.Errorf("entrypoint %v cmd %v", c.Entrypoint, c.Cmd)
				}
			},
		},
		{
			name: "empty cmd clears", base: testBase(t, linux, types.OCIManifestSchema1), layers: 1,
			cfg: Config{Cmd: []string{}},
			check: func(t *testing.T, c v1.Config) {
				if c.Cmd != nil {
					t.Errorf("cmd %v, want none", c.Cmd)
				}
			},
		},
		{
			name: "docker base gets docker layers", base: testBase(t, linux, types.DockerManifestSchema2), layers: 1,
			wantLayer: types.DockerLayer,
		},
		{
			// No image is written that pallet would refuse as a base.
			name: "a config over the base limit", base: testBase(t, linux, types.OCIManifestSchema1), layers: 1,
			cfg:     Config{Labels: map[string]string{"a": strings.Repeat("x", 3<<20), "b": strings.Repeat("y", 1<<20)}},
			wantErr: "at most 4194304 are allowed",
		},
		{
			// The bytes written count, escapes included: each < is \u003c.
			name: "a config over the limit once escaped", base: testBase(t, linux, types.OCIManifestSchema1), layers: 1,
			cfg:     Config{Env: []string{"A=" + strings.Repeat("<", 1<<20)}},
			wantErr: "at most 4194304 are allowed",
		},
		{
			// What each layer places is its history: the error says so,
			// as the env, labels and command are small.
			name: "a history over the limit", base: testBase(t, linux, types.OCIManifestSchema1), layers: 2,
			createdBy: "pallet: place " + strings.Repeat("f /long/path, ", 200_000),
			wantErr:   "of them the history (each layer's lists what it places)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var layers []Layer
			for range tc.layers {
				l := testLayer(t)
				if tc.createdBy != "" {
					l.CreatedBy = tc.createdBy
				}
				layers = append(layers, l)
			}
			img, err := Assemble(tc.base, layers, tc.cfg, epoch)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := validate.Image(img); err != nil {
				t.Fatalf("validate.Image: %v", err)
			}
			cf, _ := img.ConfigFile()
			if !cf.Created.Time.Equal(epoch) {
				t.Errorf("created %v, want the epoch", cf.Created)
			}
			ls, _ := img.Layers()
			if len(ls) != 1+tc.layers || len(cf.History) != len(ls) {
				t.Errorf("%d layers and %d history entries, want %d", len(ls), len(cf.History), 1+tc.layers)
			}
			if tc.wantLayer != "" {
				mt, _ := ls[len(ls)-1].MediaType()
				if mt != tc.wantLayer {
					t.Errorf("layer media type %s, want %s", mt, tc.wantLayer)
				}
			}
			if tc.check != nil {
				tc.check(t, cf.Config)
			}
			// The same inputs give the same image.
			again, err := Assemble(tc.base, layers, tc.cfg, epoch)
			if err != nil {
				t.Fatal(err)
			}
			d1, _ := img.Digest()
			d2, _ := again.Digest()
			if d1 != d2 {
				t.Errorf("digests differ: %s, %s", d1, d2)
			}
		})
	}
}

func TestIndexPlatforms(t *testing.T) {
	epoch := time.Unix(0, 0).UTC()
	hpc, err := (&Resolver{WorkDir: t.TempDir(), Epoch: epoch}).Base(context.Background(), HostProcessScratch, platform.Platform{OS: "windows", Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	bases := map[string]v1.Image{
		"linux/amd64":          testBase(t, v1.Platform{OS: "linux", Architecture: "amd64"}, types.OCIManifestSchema1),
		"linux/arm/v7":         testBase(t, v1.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}, types.OCIManifestSchema1),
		"windows/amd64 ltsc22": testBase(t, v1.Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.2700"}, types.OCIManifestSchema1),
		"windows/amd64 hpc":    hpc,
		// os.features is what the image needs of its host ("win32k"
		// for a GUI-capable Windows base); the index used to drop it
		// where a layout's single-image entry kept it.
		"windows/amd64 win32k": testBase(t, v1.Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.6532", OSFeatures: []string{"win32k"}}, types.OCIManifestSchema1),
	}
	var imgs []v1.Image
	for _, k := range []string{"linux/amd64", "linux/arm/v7", "windows/amd64 ltsc22", "windows/amd64 hpc", "windows/amd64 win32k"} {
		img, err := Assemble(bases[k], []Layer{testLayer(t)}, Config{}, epoch)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	idx, err := Index(imgs)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatalf("validate.Index: %v", err)
	}
	m, _ := idx.IndexManifest()
	want := []v1.Platform{
		{OS: "linux", Architecture: "amd64"},
		{OS: "linux", Architecture: "arm", Variant: "v7"},
		{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.2700"},
		// A host-process image has no os.version, on purpose: it runs on
		// every Windows version.
		{OS: "windows", Architecture: "amd64"},
		{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.6532", OSFeatures: []string{"win32k"}},
	}
	if len(m.Manifests) != len(want) {
		t.Fatalf("%d manifests, want %d", len(m.Manifests), len(want))
	}
	for i, d := range m.Manifests {
		if d.Platform == nil || !reflect.DeepEqual(*d.Platform, want[i]) {
			t.Errorf("entry %d platform %+v, want %+v", i, d.Platform, want[i])
		}
		if dd, _ := imgs[i].Digest(); d.Digest != dd {
			t.Errorf("entry %d is %s, want %s", i, d.Digest, dd)
		}
		// An image is no artifact: BuildKit's and docker's entries
		// name no artifactType (go-containerregistry's would, the
		// config's media type).
		if d.ArtifactType != "" {
			t.Errorf("entry %d has artifactType %q", i, d.ArtifactType)
		}
	}
	// The entries stand for the images themselves.
	for i := range imgs {
		d, _ := imgs[i].Digest()
		img, err := idx.Image(d)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := img.Digest(); got != d {
			t.Errorf("image %d read back as %s, want %s", i, got, d)
		}
	}
}

// SetEnvs gives what SetEnv gives one variable after another: the first
// entry of a name replaced in place, spelled anew, others appended; on
// Windows names strings.EqualFold takes for one are one, however they
// fold (the Kelvin sign and k, ſ and s, invalid UTF-8 as U+FFFD).
func TestSetEnvsAsSetEnv(t *testing.T) {
	base := []string{"PATH=/usr/bin", "path=x", "LANG=C", "\u212a=kelvin", "ſ=long", "\xff=bad", "NOVALUE", "=empty", "PATH=again"}
	kvs := []string{"Path=C:\\k", "k=1", "K=2", "S=3", "\ufffd=4", "\xfe=5", "NOVALUE=set", "=x", "NEW=1", "new=2", "NEW=3", "Σ=6", "ς=7", "σ=8", "LANG=en"}
	for _, windows := range []bool{false, true} {
		want := slices.Clone(base)
		for _, kv := range kvs {
			want = SetEnv(want, kv, windows)
		}
		if got := SetEnvs(slices.Clone(base), kvs, windows); !reflect.DeepEqual(got, want) {
			t.Errorf("windows %v: SetEnvs gave\n%q\nSetEnv one by one\n%q", windows, got, want)
		}
	}
}

// A config's variables are set in time linear in their number: set one by
// one, each looked through those before it, and a recipe's 100,000 held
// its image for most of a minute.
func TestAssembleManyEnvBounded(t *testing.T) {
	env := make([]string, 100_000)
	for i := range env {
		env[i] = fmt.Sprintf("V%d=1", i)
	}
	base := testBase(t, v1.Platform{OS: "linux", Architecture: "amd64"}, types.OCIManifestSchema1)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		img, err := Assemble(base, nil, Config{Env: env}, time.Unix(0, 0).UTC())
		if err == nil {
			var cf *v1.ConfigFile
			if cf, err = img.ConfigFile(); err == nil && len(cf.Config.Env) != len(env)+2 {
				err = fmt.Errorf("%d variables in the config, want %d", len(cf.Config.Env), len(env)+2)
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Assemble of %d variables still running after %s", len(env), time.Since(start).Round(time.Second))
	}
}
