package recipe

import (
	"strings"
	"testing"
)

// An arg may not take a built-in name, and the refusal says what pallet
// sets the name to: version, commit and tag per artifact, from its
// fields, the rest per platform.
func TestReservedArgNamesSaid(t *testing.T) {
	for name, want := range map[string]string{
		"arch":    `pallet.yaml:2: arg name "arch" is reserved: {{arch}} is one of the names set per platform ({{os}}, {{arch}}, {{variant}}, {{platform}}, {{exe}}, {{multiarch}})`,
		"exe":     `pallet.yaml:2: arg name "exe" is reserved: {{exe}} is one of the names set per platform`,
		"version": `pallet.yaml:2: arg name "version" is reserved: {{version}} is set per artifact, to the artifact's version field`,
		"commit":  `pallet.yaml:2: arg name "commit" is reserved: {{commit}} is set per artifact, to the commit of the artifact's git source (modes.source.git.commit) or of its gomod section (gomod.commit)`,
		"tag":     `pallet.yaml:2: arg name "tag" is reserved: {{tag}} is set per artifact, to the tag of the artifact's git source (modes.source.git.tag)`,
	} {
		_, err := Parse("pallet.yaml", []byte(`version: 1
args: {`+name+`: x}
artifacts:
  a: {local: {path: a}, licenses: none}
images:
  app: {base: scratch, platforms: [linux/amd64], files: [{artifact: a, dest: /a}]}
`))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("arg %s: got %v, want %q", name, err, want)
		}
	}
}

// The unknown-variable message lists every name pallet sets, among them
// {{commit}} of a gomod section as well as of a git source.
func TestUnknownVariableListsArtifactNames(t *testing.T) {
	r, err := Parse("pallet.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Vars(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Expand("artifacts.cni.url.url", "{{NOPE}}", v)
	want := "pallet.yaml:10: unknown variable {{NOPE}} (args: VERSION; per platform: os, arch, variant, platform, exe, multiarch; per artifact: version, of its version field; commit, of its git source or gomod section; tag, of its git source)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
