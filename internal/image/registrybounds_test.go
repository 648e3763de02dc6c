package image

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

// A registry base whose manifest declares a config of gigabytes, or whose
// manifest itself goes on past containerd's 4 MiB, is refused before
// either is read into memory.
func TestRegistryBaseBounds(t *testing.T) {
	const fakeDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000001"
	manifest := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
		`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},"layers":[]}`, fakeDigest, int64(3)<<30)
	var blobBytes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
		case strings.HasSuffix(r.URL.Path, "/manifests/bigconfig"):
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.Write([]byte(manifest))
		case strings.HasSuffix(r.URL.Path, "/manifests/huge"):
			// No length said: only the bytes tell.
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.Write([]byte(`{"schemaVersion":2,"annotations":{"x":"`))
			chunk := []byte(strings.Repeat("x", 64<<10))
			for range 200 { // 12.5 MiB
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			w.Write([]byte(`"}}`))
		case strings.Contains(r.URL.Path, "/blobs/"):
			chunk := make([]byte, 1<<20)
			for {
				n, err := w.Write(chunk)
				blobBytes.Add(int64(n))
				if err != nil {
					return
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	for tag, want := range map[string]string{"bigconfig": "its config is 3221225472 bytes", "huge": "a manifest over the 4194304 bytes"} {
		start := time.Now()
		_, err := (&Resolver{}).Base(context.Background(), host+"/x/y:"+tag, platform.Platform{OS: "linux", Arch: "amd64"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", tag, err, want)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: refused after %s", tag, d)
		}
	}
	if n := blobBytes.Load(); n > 0 {
		t.Errorf("%d bytes of the config were read", n)
	}
}

// A registry base's indexes may nest MaxIndexDepth deep, as a layout's:
// go-containerregistry follows nested indexes without a bound, so a
// registry serving a chain of 1000 was asked for each of them.
func TestRegistryBaseNestedIndexes(t *testing.T) {
	const n = 1000
	indexes := make([][]byte, n)
	child := fmt.Sprintf(`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%064d","size":10,"platform":{"os":"linux","architecture":"amd64"}}`, 1)
	for i := n - 1; i >= 0; i-- {
		indexes[i] = []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` + child + `]}`)
		child = fmt.Sprintf(`{"mediaType":"application/vnd.oci.image.index.v1+json","digest":%q,"size":%d,"platform":{"os":"linux","architecture":"amd64"}}`, sha256Hash(indexes[i]), len(indexes[i]))
	}
	byRef := map[string][]byte{"top": indexes[0]}
	for _, idx := range indexes {
		byRef[sha256Hash(idx).String()] = idx
	}
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		_, ref, _ := strings.Cut(r.URL.Path, "/manifests/")
		idx, ok := byRef[ref]
		if !ok {
			http.NotFound(w, r)
			return
		}
		asked.Add(1)
		w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
		w.Header().Set("Docker-Content-Digest", sha256Hash(idx).String())
		w.Write(idx)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	_, err := (&Resolver{}).Base(context.Background(), host+"/x/y:top", platform.Platform{OS: "linux", Arch: "amd64"})
	if err == nil || !strings.Contains(err.Error(), "nest more than 8") {
		t.Errorf("%v, want the nesting refused", err)
	}
	if got := asked.Load(); got > 2*MaxIndexDepth {
		t.Errorf("%d indexes asked for", got)
	}
}

// A registry base served as a Docker schema 1 manifest is refused saying
// so and what to do; go-containerregistry's own error names only the
// media type and an issue of its tracker.
func TestRegistryBaseSchema1(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
		case strings.HasSuffix(r.URL.Path, "/manifests/v1"):
			w.Header().Set("Content-Type", "application/vnd.docker.distribution.manifest.v1+prettyjws")
			w.Write([]byte(`{"schemaVersion":1,"name":"x/y","tag":"v1","architecture":"amd64","fsLayers":[],"history":[],"signatures":[]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/x/y:v1"
	_, err := (&Resolver{}).Base(context.Background(), ref, platform.Platform{OS: "linux", Arch: "amd64"})
	if err == nil || !strings.Contains(err.Error(), "base "+ref+" for linux/amd64: its manifest is Docker's schema 1 (application/vnd.docker.distribution.manifest.v1+prettyjws)") ||
		!strings.Contains(err.Error(), "push it again as an OCI or Docker schema 2 image") {
		t.Errorf("err = %v", err)
	}
}

// A registry that sends an image manifest as an index, or an index as an
// image manifest, is refused saying so, as containerd refuses it: read
// by the Content-Type, the one said "no child with platform linux/amd64",
// the other failed on its missing config. A Content-Type that is neither
// (text/plain, from a static server) still reads as the image it is.
func TestRegistryBaseContentTypeDisagrees(t *testing.T) {
	var contentType atomic.Value
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if ct, _ := contentType.Load().(string); ct != "" && strings.Contains(r.URL.Path, "/manifests/") {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				maps.Copy(w.Header(), rec.Header())
				w.Header().Set("Content-Type", ct)
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes())
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	img, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), &v1.ConfigFile{OS: "linux", Architecture: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{Add: img})
	imgRef, idxRef := reg.Host+"/ct/img:v1", reg.Host+"/ct/idx:v1"
	if err := remote.Write(mustRef(t, imgRef), img); err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(mustRef(t, idxRef), idx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ref, contentType, want string }{
		{imgRef, string(types.OCIImageIndex), "the registry sends its manifest as application/vnd.oci.image.index.v1+json (its Content-Type), but it is an image manifest (application/vnd.oci.image.manifest.v1+json)"},
		{idxRef, string(types.DockerManifestSchema2), "the registry sends its manifest as application/vnd.docker.distribution.manifest.v2+json (its Content-Type), but it is an index (application/vnd.oci.image.index.v1+json)"},
		{imgRef, "text/plain; charset=utf-8", ""},
	} {
		contentType.Store(c.contentType)
		_, err := (&Resolver{}).Base(context.Background(), c.ref, linuxAMD64)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s sent as %s: %v", c.ref, c.contentType, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s sent as %s: err = %v, want %q", c.ref, c.contentType, err, c.want)
		}
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A field given as null is no field: an image manifest that says
// "manifests": null is still an image's, as Go's encoders write an empty
// slice of a struct without omitempty.
func TestAgreesTakesNullForAbsent(t *testing.T) {
	for mt, body := range map[types.MediaType]string{
		types.OCIManifestSchema1: `{"schemaVersion":2,"config":{},"layers":[],"manifests":null}`,
		types.OCIImageIndex:      `{"schemaVersion":2,"manifests":[],"config":null,"layers":null}`,
	} {
		d := &remote.Descriptor{Descriptor: v1.Descriptor{MediaType: mt}, Manifest: []byte(body)}
		if err := agrees(d); err != nil {
			t.Errorf("%s %s: %v", mt, body, err)
		}
	}
}

// A registry index with nothing for the platform says what it holds, as
// a layout does: an index of an arm64 image and its BuildKit attestation
// (unknown/unknown) said only "no child with platform linux/amd64".
func TestRegistryBaseSaysWhatItsIndexHolds(t *testing.T) {
	reg := testregistry.Start(t, nil)
	img, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), &v1.ConfigFile{OS: "linux", Architecture: "arm64"})
	if err != nil {
		t.Fatal(err)
	}
	att, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), &v1.ConfigFile{})
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"}}})
	ref := reg.Host + "/holds/base:v1"
	if err := remote.WriteIndex(mustRef(t, ref), idx); err != nil {
		t.Fatal(err)
	}
	_, err = (&Resolver{}).Base(context.Background(), ref, linuxAMD64)
	if want := "(it holds linux/arm64; unknown/unknown)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// A registry index whose child for the platform is an index with nothing
// for it says what that nested index holds, fetched or carried in its
// descriptor's data: the text was chosen by matching
// go-containerregistry's error ("no child with platform"), and said what
// the top index held, linux/amd64, the platform asked.
func TestRegistryBaseSaysWhatItsNestedIndexHolds(t *testing.T) {
	inner := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[`+
		`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%064d","size":10,"platform":{"os":"linux","architecture":"arm64"}}]}`, 1))
	entry := fmt.Sprintf(`{"mediaType":"application/vnd.oci.image.index.v1+json","digest":%q,"size":%d,"platform":{"os":"linux","architecture":"amd64"}`, sha256Hash(inner), len(inner))
	byRef := map[string][]byte{
		"fetched":                  []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` + entry + `}]}`),
		"carried":                  []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` + entry + fmt.Sprintf(`,"data":%q}]}`, base64.StdEncoding.EncodeToString(inner))),
		sha256Hash(inner).String(): inner,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		_, ref, _ := strings.Cut(r.URL.Path, "/manifests/")
		b, ok := byRef[ref]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
		w.Header().Set("Docker-Content-Digest", sha256Hash(b).String())
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, ref := range []string{"fetched", "carried"} {
		_, err := (&Resolver{}).Base(context.Background(), host+"/x/y:"+ref, linuxAMD64)
		if want := fmt.Sprintf("the index %s it nests has no image for linux/amd64 (it holds linux/arm64)", sha256Hash(inner)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", ref, err, want)
		}
	}
}
