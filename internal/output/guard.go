package output

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/lazyre"
)

// pallet replaces an existing output only when it is certainly an earlier
// output: whatever else sits at the path is the user's and is not
// destroyed. The checks below are on names and small metadata files, not
// on blob contents: they tell an image from other data, not a sound image
// from a damaged one (which is replaced like any other).

const (
	// maxLayoutMarker bounds the oci-layout file read: the real one is a
	// few dozen bytes.
	maxLayoutMarker = 4 << 10
	// maxIndexJSON and maxDockerManifest bound the metadata read from an
	// existing output to decide whether it is one: far above what
	// thousands of tags need, far below what could hurt.
	maxIndexJSON      = 16 << 20
	maxDockerManifest = 16 << 20
)

var (
	// Algorithm and encoded-digest grammar of the OCI image spec
	// (descriptor.md), with the registered algorithms held to their
	// exact form.
	blobAlgorithm = lazyre.New(`^[a-z0-9]+(?:[+._-][a-z0-9]+)*$`)
	blobEncoded   = lazyre.New(`^[a-zA-Z0-9=_-]+$`)
	registered    = map[string]func() *regexp.Regexp{
		"sha256": lazyre.New(`^[a-f0-9]{64}$`),
		"sha512": lazyre.New(`^[a-f0-9]{128}$`),
	}
)

// notOurs is the refusal to replace a path that holds something pallet did
// not write.
func notOurs(out, what string) error {
	return fmt.Errorf("%s: %s; pallet replaces only a missing path, an empty directory or an earlier OCI image layout (oci-layout, index.json, blobs/<alg>/<digest> and nothing else), so choose another output directory or remove it yourself", out, what)
}

// replaceable says whether dir (resolved) may be replaced by a new layout:
// it does not exist, is empty, or holds exactly an OCI image layout.
func replaceable(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check output %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return notOurs(dir, "it is not a directory")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("check output %s: %w", dir, err)
	}
	if len(entries) == 0 {
		return nil
	}
	seen := map[string]bool{}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case (e.Name() == "oci-layout" || e.Name() == "index.json") && e.Type().IsRegular():
			seen[e.Name()] = true
		case e.Name() == "blobs" && e.IsDir():
			if err := checkBlobs(dir, p); err != nil {
				return err
			}
		default:
			return notOurs(dir, fmt.Sprintf("it holds %s, which is not part of an OCI image layout", p))
		}
	}
	for _, f := range []string{"oci-layout", "index.json"} {
		if !seen[f] {
			return notOurs(dir, fmt.Sprintf("it holds files but no %s, so it is not an OCI image layout", f))
		}
	}
	if err := checkLayoutMarker(dir); err != nil {
		return err
	}
	return checkIndexJSON(dir)
}

// checkBlobs accepts blobs/<alg>/<encoded> regular files and nothing else.
func checkBlobs(dir, blobs string) error {
	algs, err := os.ReadDir(blobs)
	if err != nil {
		return fmt.Errorf("check output %s: %w", dir, err)
	}
	for _, a := range algs {
		ap := filepath.Join(blobs, a.Name())
		if !a.IsDir() || !blobAlgorithm().MatchString(a.Name()) {
			return notOurs(dir, fmt.Sprintf("it holds %s, which is not a blob directory of an OCI image layout", ap))
		}
		files, err := os.ReadDir(ap)
		if err != nil {
			return fmt.Errorf("check output %s: %w", dir, err)
		}
		form := registered[a.Name()]
		if form == nil {
			form = blobEncoded
		}
		for _, f := range files {
			if !f.Type().IsRegular() || !form().MatchString(f.Name()) {
				return notOurs(dir, fmt.Sprintf("it holds %s, which is not a blob of an OCI image layout", filepath.Join(ap, f.Name())))
			}
		}
	}
	return nil
}

func checkLayoutMarker(dir string) error {
	p := filepath.Join(dir, "oci-layout")
	var m struct {
		ImageLayoutVersion string `json:"imageLayoutVersion"`
	}
	if err := readJSON(p, maxLayoutMarker, &m); err != nil || m.ImageLayoutVersion == "" {
		return notOurs(dir, fmt.Sprintf("%s is not an OCI layout marker (JSON with imageLayoutVersion)", p))
	}
	return nil
}

func checkIndexJSON(dir string) error {
	p := filepath.Join(dir, "index.json")
	var idx struct {
		SchemaVersion int               `json:"schemaVersion"`
		Manifests     []json.RawMessage `json:"manifests"`
	}
	if err := readJSON(p, maxIndexJSON, &idx); err != nil || idx.SchemaVersion != 2 {
		return notOurs(dir, fmt.Sprintf("%s is not an OCI image index (JSON with schemaVersion 2)", p))
	}
	return nil
}

// readJSON decodes the file p, refusing one larger than limit.
func readJSON(p string, limit int64, v any) error {
	if indexJSONOps != nil && filepath.Base(p) == "index.json" {
		indexJSONOps("read")
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return decodeLimited(f, limit, p, v)
}

func decodeLimited(r io.Reader, limit int64, what string, v any) error {
	b, err := bounded.ReadAll(r, limit)
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parse %s: %w", what, err)
	}
	return nil
}

// notArchive is the refusal to replace a path that is not an earlier
// docker archive.
func notArchive(file, what string) error {
	return fmt.Errorf("%s: %s; pallet replaces only a missing path or an earlier docker archive (a tar whose manifest.json is a `docker save` manifest), so choose another output file or remove it yourself", file, what)
}

// replaceableArchive says whether file (resolved) may be replaced by a new
// docker archive: it does not exist, or is a regular file holding a docker
// archive.
func replaceableArchive(file string) error {
	fi, err := os.Lstat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check output %s: %w", file, err)
	}
	if !fi.Mode().IsRegular() {
		return notArchive(file, fmt.Sprintf("it is not a regular file (%s)", bounded.TypeName(fi.Mode())))
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("check output %s: %w", file, err)
	}
	defer f.Close()
	if err := checkDockerArchive(f); err != nil {
		return notArchive(file, err.Error())
	}
	return nil
}

// checkDockerArchive reads a tar (skipping file contents: tar.Reader seeks
// over them in a file) for a manifest.json in the shape `docker save`
// writes, naming config files that the tar holds.
func checkDockerArchive(r io.Reader) error {
	tr := tar.NewReader(r)
	names := map[string]bool{}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	found := false
	// Entries docker load unpacks as manifest.json: an appended tar can
	// hold several, of which loaders differ on the one they take.
	manifests := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("it is not a tar archive (%v)", err)
		}
		name := path.Clean(h.Name)
		names[name] = true
		if strings.TrimPrefix(name, "/") == "manifest.json" {
			manifests++
		}
		if name != "manifest.json" || found {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return errors.New("its manifest.json is not a regular file")
		}
		if err := decodeLimited(tr, maxDockerManifest, "manifest.json", &manifest); err != nil || manifest == nil {
			return errors.New("its manifest.json is not a docker save manifest (a JSON list of Config, RepoTags, Layers)")
		}
		found = true
	}
	if !found {
		return errors.New("it is not a docker archive (no manifest.json)")
	}
	if manifests > 1 {
		// What docker save and pallet write hold one; this may be a
		// user's bundle of archives, and the one read here is not the
		// one docker load and ctr import take (the last).
		return fmt.Errorf("it holds %d entries named manifest.json (an appended tar?), where docker save and pallet write one", manifests)
	}
	for _, m := range manifest {
		if m.Config == "" || !names[path.Clean(m.Config)] {
			return fmt.Errorf("its manifest.json names config %q, which the archive does not hold", m.Config)
		}
	}
	return nil
}

// maxOwnJSON bounds what is read of a file to tell whether pallet wrote
// it. The keys that tell come first in pallet's files, so a record of
// 100,000 files (17 MB) is not read whole.
const maxOwnJSON = 256 << 20

// CheckOwnJSON says whether the file at p may be replaced by a new one of
// pallet's: it does not exist, or is a JSON object holding every key of
// one of keySets at its top level (an earlier build's file). Anything else
// there is the user's, and is not overwritten: a recipe, notes, a file the
// build reads. what names the file in the refusal ("--record").
func CheckOwnJSON(p, what string, keySets ...[]string) error {
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, p, err)
	}
	refuse := func(why string) error {
		return fmt.Errorf("%s %s: %s; pallet replaces only a missing file or one it wrote, so choose another path or remove it yourself", what, p, why)
	}
	if !fi.Mode().IsRegular() {
		return refuse(fmt.Sprintf("it is not a regular file (%s)", bounded.TypeName(fi.Mode())))
	}
	if fi.Size() == 0 {
		return nil // nothing to lose: mktemp's, or a touch'd path
	}
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, p, err)
	}
	defer f.Close()
	if !hasKeys(json.NewDecoder(io.LimitReader(f, maxOwnJSON)), keySets) {
		var sets []string
		for _, ks := range keySets {
			sets = append(sets, strings.Join(ks, ", "))
		}
		return refuse(fmt.Sprintf("it exists and is not one pallet wrote (a JSON object with %s)", strings.Join(sets, "; or ")))
	}
	return nil
}

// hasKeys reads a JSON object's members until every key of one of
// keySets has been seen.
func hasKeys(d *json.Decoder, keySets [][]string) bool {
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return false
		}
		key, _ := t.(string)
		seen[key] = true
		for _, keys := range keySets {
			if !slices.ContainsFunc(keys, func(k string) bool { return !seen[k] }) {
				return true
			}
		}
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return false
		}
	}
	return false
}
