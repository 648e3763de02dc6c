package output

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// A single-platform image's entry carries its platform, and no
// artifactType, so that readers can tell it from its attachments.
func TestLayoutEntryNamesPlatform(t *testing.T) {
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf.OS, cf.Architecture, cf.OSVersion = "windows", "amd64", "10.0.17763.1"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := (&Layout{Dir: dir}).Write(context.Background(), []Image{{Repository: "app", Tags: []string{"v1"}, Image: img}}); err != nil {
		t.Fatal(err)
	}
	es := layoutEntries(t, dir)
	want := v1.Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.17763.1"}
	if len(es) != 1 || es[0].Platform == nil || !es[0].Platform.Equals(want) || es[0].ArtifactType != "" {
		t.Errorf("entry %+v, want platform %+v and no artifactType", es, want)
	}
}

// Each entry's io.containerd.image.name is the full reference, as
// containerd names images: `ctr import` keeps the annotation as it stands,
// and the CRI plugin finds "hello:latest" only as
// docker.io/library/hello:latest. The OCI ref.name stays the tag.
func TestLayoutContainerdNameIsFull(t *testing.T) {
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		repo string
		want []string
	}{
		{"hello", []string{"latest|docker.io/library/hello:latest", "0.1|docker.io/library/hello:0.1"}},
		{"team/app", []string{"latest|docker.io/team/app:latest", "0.1|docker.io/team/app:0.1"}},
		{"ghcr.io/org/app", []string{"latest|ghcr.io/org/app:latest", "0.1|ghcr.io/org/app:0.1"}},
		{"127.0.0.1:5000/app", []string{"latest|127.0.0.1:5000/app:latest", "0.1|127.0.0.1:5000/app:0.1"}},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		if err := (&Layout{Dir: dir}).Write(context.Background(), []Image{{Repository: tc.repo, Tags: []string{"latest", "0.1"}, Image: img}}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range layoutEntries(t, dir) {
			got = append(got, e.Annotations[refNameKey]+"|"+e.Annotations["io.containerd.image.name"])
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: entries %q, want %q", tc.repo, got, tc.want)
		}
	}
}

// A layout other tools also write to keeps their entries, and the blobs
// those need: pallet replaces its own entries (marked), the tags it
// writes, and their attachments; it removes only the blobs of what it
// replaced, never one no entry named (another tool may be writing it).
func TestLayoutKeepsOtherToolsEntries(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "shared")
	rnd := func() v1.Image {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	// Another tool's layout: "other" and "v1" tagged, and an attachment
	// of "v1" (untagged, with a subject).
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	other, theirV1 := rnd(), rnd()
	v1d, err := partial.Descriptor(theirV1)
	if err != nil {
		t.Fatal(err)
	}
	sbom := mutate.Subject(rnd(), *v1d).(v1.Image)
	for img, ref := range map[v1.Image]string{other: "other", theirV1: "v1"} {
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.AppendImage(sbom); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(dir, "blobs", "sha256", strings.Repeat("ab", 32))
	if err := os.WriteFile(orphan, []byte("being written by another tool"), 0o644); err != nil {
		t.Fatal(err)
	}

	write := func(img v1.Image, tags ...string) {
		t.Helper()
		if err := (&Layout{Dir: dir}).Write(ctx, []Image{{Repository: "app", Tags: tags, Image: img}}); err != nil {
			t.Fatal(err)
		}
	}
	ours1, ours2 := rnd(), rnd()
	write(ours1, "v1", "v2")
	write(ours2, "v3") // pallet's v1 and v2 go: they are its own

	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		got = append(got, d.Annotations["org.opencontainers.image.ref.name"]+"="+d.Digest.Hex[:8])
	}
	od, _ := other.Digest()
	o2, _ := ours2.Digest()
	want := []string{"v3=" + o2.Hex[:8], "other=" + od.Hex[:8]}
	if !slices.Equal(got, want) {
		t.Errorf("entries %v, want %v", got, want)
	}
	// Every entry is whole; the replaced ones' blobs are gone.
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err == nil {
			err = validate.Image(img)
		}
		if err != nil {
			t.Errorf("%s: %v", d.Annotations["org.opencontainers.image.ref.name"], err)
		}
	}
	for _, img := range []v1.Image{theirV1, sbom, ours1} {
		d, _ := img.Digest()
		if _, err := os.Stat(filepath.Join(dir, "blobs", "sha256", d.Hex)); err == nil {
			t.Errorf("manifest %s of a replaced entry is still there", d)
		}
	}
	if _, err := os.Stat(orphan); err != nil {
		t.Errorf("a blob no entry named was removed: %v", err)
	}
}

// layoutEntries lists the entries of the layout at dir.
func layoutEntries(t *testing.T, dir string) []v1.Descriptor {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return m.Manifests
}

// Attachments and copies other tools make of pallet's entries are theirs:
// a signature of an image the rebuild writes again stays; a copy of an
// entry under another tag (umoci tag) stays, with its manifest; the
// per-platform attachments a pallet that did not mark its entries wrote
// go with the manifests they were attached to (found by helper-43).
func TestLayoutAttachmentsAndCopies(t *testing.T) {
	ctx := context.Background()
	rnd := func(n int64) v1.Image {
		img, err := random.Image(n, 1)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	write := func(dir string, im Image) {
		t.Helper()
		if err := (&Layout{Dir: dir}).Write(ctx, []Image{im}); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("a signature of an unchanged image", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		img := rnd(256)
		write(dir, Image{Repository: "app", Tags: []string{"v1"}, Image: img})
		p, err := layout.FromPath(dir)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := partial.Descriptor(img)
		if err := p.AppendImage(mutate.Subject(rnd(64), *d).(v1.Image)); err != nil {
			t.Fatal(err)
		}
		write(dir, Image{Repository: "app", Tags: []string{"v1"}, Image: img})
		if es := layoutEntries(t, dir); len(es) != 2 {
			t.Errorf("%d entries, want the image and its signature", len(es))
		}
	})
	t.Run("a copy under another tag", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		write(dir, Image{Repository: "app", Tags: []string{"v1"}, Image: rnd(256)})
		d := layoutEntries(t, dir)[0]
		d.Annotations = maps.Clone(d.Annotations)
		d.Annotations[refNameKey] = "stable" // umoci tag copies the rest
		p, _ := layout.FromPath(dir)
		if err := p.AppendDescriptor(d); err != nil {
			t.Fatal(err)
		}
		write(dir, Image{Repository: "app", Tags: []string{"v1"}, Image: rnd(256)})
		var refs []string
		for _, e := range layoutEntries(t, dir) {
			refs = append(refs, e.Annotations[refNameKey])
		}
		if !slices.Equal(refs, []string{"v1", "stable"}) {
			t.Errorf("refs %v, want v1 and the user's stable", refs)
		}
		if _, err := os.Stat(filepath.Join(dir, "blobs", "sha256", d.Digest.Hex)); err != nil {
			t.Errorf("stable's manifest: %v", err)
		}
	})
	t.Run("an earlier pallet's per-platform attachments", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		a := rnd(256)
		idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: a}, mutate.IndexAddendum{Add: rnd(256)})
		ad, _ := partial.Descriptor(a)
		sbom := mutate.Subject(rnd(64), *ad).(v1.Image)
		write(dir, Image{Repository: "app", Tags: []string{"v1"}, Index: idx, Referrers: []v1.Image{sbom}})
		// As a pallet that did not mark its entries wrote it.
		var im v1.IndexManifest
		raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
		if err == nil {
			err = json.Unmarshal(raw, &im)
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range im.Manifests {
			delete(im.Manifests[i].Annotations, writtenKey)
		}
		if raw, err = json.Marshal(im); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "index.json"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		write(dir, Image{Repository: "app", Tags: []string{"v1"}, Index: mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: rnd(256)})})
		if es := layoutEntries(t, dir); len(es) != 1 {
			t.Errorf("%d entries: the attachment of a replaced platform manifest stayed", len(es))
		}
		sd, _ := sbom.Digest()
		if _, err := os.Stat(filepath.Join(dir, "blobs", "sha256", sd.Hex)); err == nil {
			t.Error("the attachment's manifest stayed")
		}
	})
}

// What go-containerregistry does not model in index.json, another tool's
// top-level annotations and fields and its entries' unknown fields,
// survives pallet's rewrite; a rebuild that changes nothing then writes
// nothing.
func TestLayoutKeepsForeignIndexFields(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "shared")
	theirs, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(theirs, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "theirs"})); err != nil {
		t.Fatal(err)
	}
	indexFile := filepath.Join(dir, "index.json")
	var raw map[string]any
	readRaw := func() {
		t.Helper()
		b, err := os.ReadFile(indexFile)
		if err != nil {
			t.Fatal(err)
		}
		raw = nil
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
	}
	readRaw()
	raw["annotations"] = map[string]any{"org.example.owner": "team"}
	raw["x-vendor"] = []any{1.0, "two"}
	first := raw["manifests"].([]any)[0].(map[string]any)
	first["x-signed"] = true
	// Copies of it that re-encoding would change besides dropping their
	// field (an empty list ggcr leaves out), and one that differs from
	// another only in an unknown field (found by helper-44).
	second := map[string]any{}
	for k, v := range first {
		second[k] = v
	}
	delete(second, "x-signed")
	second["x-other"] = "b"
	second["urls"] = []any{}
	third := map[string]any{}
	for k, v := range second {
		third[k] = v
	}
	third["x-other"] = "c"
	raw["manifests"] = append(raw["manifests"].([]any), second, third)
	b, _ := json.Marshal(raw)
	if err := os.WriteFile(indexFile, b, 0o644); err != nil {
		t.Fatal(err)
	}

	ours, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	write := func() {
		t.Helper()
		if err := (&Layout{Dir: dir}).Write(ctx, []Image{{Repository: "app", Tags: []string{"v1"}, Image: ours}}); err != nil {
			t.Fatal(err)
		}
	}
	write()
	readRaw()
	if a, _ := raw["annotations"].(map[string]any); a["org.example.owner"] != "team" {
		t.Errorf("top-level annotations %v", raw["annotations"])
	}
	if v, _ := raw["x-vendor"].([]any); len(v) != 2 {
		t.Errorf("x-vendor %v", raw["x-vendor"])
	}
	var refs []string
	for _, e := range raw["manifests"].([]any) {
		m := e.(map[string]any)
		ref := m["annotations"].(map[string]any)["org.opencontainers.image.ref.name"].(string)
		refs = append(refs, fmt.Sprintf("%s|%v|%v|%v", ref, m["x-signed"], m["x-other"], m["urls"]))
	}
	if want := []string{"v1|<nil>|<nil>|<nil>", "theirs|true|<nil>|<nil>", "theirs|<nil>|b|[]", "theirs|<nil>|c|[]"}; !slices.Equal(refs, want) {
		t.Errorf("entries %q\nwant    %q", refs, want)
	}
	if _, err := layout.ImageIndexFromPath(dir); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(indexFile)
	if err != nil {
		t.Fatal(err)
	}
	write()
	after, err := os.Stat(indexFile)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Error("a rebuild that changed nothing rewrote index.json")
	}
}

// A layout's files are data, not programs, whether the layout is new or
// updated in place.
func TestLayoutFilesAreNotExecutable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	for i := range 2 {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := (&Layout{Dir: dir}).Write(context.Background(), []Image{{Repository: "app", Tags: []string{"v1"}, Image: img}}); err != nil {
			t.Fatal(err)
		}
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err == nil && info.Mode().Perm()&0o111 != 0 {
				t.Errorf("write %d: %s is %v", i+1, p, info.Mode())
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// index.json is read and written a fixed number of times whatever the
// number of tags: appending entry by entry rewrote it once per tag, and
// 2000 tags took a minute (found by the hostile-input probe, 28). The
// entries keep their order and names, other tools' entries follow.
func TestLayoutManyTagsWriteIndexOnce(t *testing.T) {
	ctx := context.Background()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	indexJSONOps = func(op string) { ops[op]++ }
	defer func() { indexJSONOps = nil }()
	// count writes the layout twice, new and then in place, with n tags
	// and an entry of another tool's.
	count := func(n int) map[string]int {
		t.Helper()
		var tags []string
		for i := range n {
			tags = append(tags, fmt.Sprintf("t%d", i))
		}
		dir := filepath.Join(t.TempDir(), "out")
		write := func() {
			t.Helper()
			if err := (&Layout{Dir: dir}).Write(ctx, []Image{{Repository: "app", Tags: tags, Image: img}}); err != nil {
				t.Fatal(err)
			}
		}
		clear(ops)
		write()
		p, err := layout.FromPath(dir)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.AppendImage(theirs, layout.WithAnnotations(map[string]string{refNameKey: "theirs"})); err != nil {
			t.Fatal(err)
		}
		write()
		var refs []string
		for _, e := range layoutEntries(t, dir) {
			refs = append(refs, e.Annotations[refNameKey]+"|"+e.Annotations["io.containerd.image.name"]+"|"+e.Annotations[writtenKey])
		}
		var want []string
		for _, tag := range tags {
			want = append(want, tag+"|docker.io/library/app:"+tag+"|"+tag)
		}
		want = append(want, "theirs||")
		if !slices.Equal(refs, want) {
			t.Errorf("%d tags: entries %q\nwant %q", n, refs, want)
		}
		return maps.Clone(ops)
	}
	one, many := count(1), count(300)
	if !maps.Equal(one, many) || one["write"] == 0 {
		t.Errorf("index.json reads and writes: %v with 1 tag, %v with 300", one, many)
	}
}
