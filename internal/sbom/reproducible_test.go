package sbom

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// shuffled is in with every list in another order: artifacts, their
// files, binaries, modules, licences, placements, platforms; and its
// maps rebuilt, so their iteration order differs too.
func shuffled(in Input, r *rand.Rand) Input {
	mix := func(n int, swap func(i, j int)) { r.Shuffle(n, swap) }
	in.Artifacts = slices.Clone(in.Artifacts)
	for i := range in.Artifacts {
		a := &in.Artifacts[i]
		a.Files = slices.Clone(a.Files)
		mix(len(a.Files), func(i, j int) { a.Files[i], a.Files[j] = a.Files[j], a.Files[i] })
		a.LicenseFiles = slices.Clone(a.LicenseFiles)
		mix(len(a.LicenseFiles), func(i, j int) { a.LicenseFiles[i], a.LicenseFiles[j] = a.LicenseFiles[j], a.LicenseFiles[i] })
		a.Go = slices.Clone(a.Go)
		mix(len(a.Go), func(i, j int) { a.Go[i], a.Go[j] = a.Go[j], a.Go[i] })
		for k := range a.Go {
			a.Go[k].Deps = slices.Clone(a.Go[k].Deps)
			d := a.Go[k].Deps
			mix(len(d), func(i, j int) { d[i], d[j] = d[j], d[i] })
		}
		sha1s := map[string]string{}
		for k, v := range a.SHA1 {
			sha1s[k] = v
		}
		a.SHA1 = sha1s
	}
	mix(len(in.Artifacts), func(i, j int) { in.Artifacts[i], in.Artifacts[j] = in.Artifacts[j], in.Artifacts[i] })
	in.Placed = slices.Clone(in.Placed)
	mix(len(in.Placed), func(i, j int) { in.Placed[i], in.Placed[j] = in.Placed[j], in.Placed[i] })
	in.Platforms = slices.Clone(in.Platforms)
	mix(len(in.Platforms), func(i, j int) { in.Platforms[i], in.Platforms[j] = in.Platforms[j], in.Platforms[i] })
	args := map[string]string{}
	for k, v := range in.Args {
		args[k] = v
	}
	in.Args = args
	return in
}

// TestReproducible: the same input, in any order, gives the same bytes,
// for each document; and a different image gives a different name and
// serial number.
func TestReproducible(t *testing.T) {
	makers := map[string]func(Input) ([]byte, error){"spdx": SPDX, "cyclonedx": CycloneDX, "provenance": Provenance}
	want := map[string][]byte{}
	for name, make := range makers {
		b, err := make(sampleInput())
		if err != nil {
			t.Fatal(err)
		}
		want[name] = b
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20; i++ {
		in := shuffled(sampleInput(), r)
		for name, make := range makers {
			got, err := make(in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want[name]) {
				t.Fatalf("%s differs with shuffled input (round %d):\n%s", name, i, firstDiff(want[name], got))
			}
		}
	}

	// A different image: another manifest digest.
	other := sampleInput()
	other.Digest = "sha256:" + hexSHA256("manifest arm64")
	spdx, err := SPDX(other)
	if err != nil {
		t.Fatal(err)
	}
	cdx, err := CycloneDX(other)
	if err != nil {
		t.Fatal(err)
	}
	if decode(t, spdx)["documentNamespace"] == decode(t, want["spdx"])["documentNamespace"] {
		t.Error("two images share a document namespace")
	}
	s1, s2 := decode(t, cdx)["serialNumber"].(string), decode(t, want["cyclonedx"])["serialNumber"].(string)
	if s1 == s2 {
		t.Error("two images share a serial number")
	}
	// The serial number is a name-based UUID (version 5, RFC 4122 variant).
	if s1[23] != '5' || !strings.ContainsRune("89ab", rune(s1[28])) {
		t.Errorf("serial number %s is not a version 5 UUID", s1)
	}
}

func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return "line " + la[i] + "\n  vs " + lb[i]
		}
	}
	return "lengths differ"
}

// TestNothingOfTheMachine: no path of the builder's machine outside the
// recipe's directory, no credentials of a URL, no clock, enter the
// documents; timestamps enter the provenance only when asked for.
func TestNothingOfTheMachine(t *testing.T) {
	in := sampleInput()
	docs, err := All(in)
	if err != nil {
		t.Fatal(err)
	}
	year := time.Now().Format("2006-")
	for _, d := range docs {
		for _, bad := range []string{"/home/builder", "s3cret", "user:", year, "../patched"} {
			if bytes.Contains(d.Data, []byte(bad)) {
				t.Errorf("%s holds %q", d.Name, bad)
			}
		}
	}
	prov := decode(t, docs[2].Data)
	if _, ok := prov["predicate"].(map[string]any)["runDetails"].(map[string]any)["metadata"]; ok {
		t.Error("the provenance has metadata (times) though none was asked for")
	}

	in.StartedOn = time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("x", 3600))
	in.FinishedOn = in.StartedOn.Add(90 * time.Second)
	b, err := Provenance(in)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, "https://pallet.dev/testdata/slsa-provenance-v1.schema.json", b)
	md := decode(t, b)["predicate"].(map[string]any)["runDetails"].(map[string]any)["metadata"].(map[string]any)
	if md["startedOn"] != "2024-05-06T06:08:09Z" || md["finishedOn"] != "2024-05-06T06:09:39Z" {
		t.Errorf("metadata %v, want the asked times in UTC", md)
	}
}
