package sbom

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// StatementType is the in-toto Statement version written.
const StatementType = "https://in-toto.io/Statement/v1"

// DigestPalletTree is the DigestSet key of a local directory's digest:
// pallet's tree digest (paths, kinds, modes, link targets and file
// sha256s, hashed with sha256; internal/tree.Digest), in lowercase hex.
const DigestPalletTree = "palletTreeSha256"

type statement struct {
	Type          string               `json:"_type"`
	Subject       []resourceDescriptor `json:"subject"`
	PredicateType string               `json:"predicateType"`
	Predicate     any                  `json:"predicate"`
}

// resourceDescriptor is in-toto's ResourceDescriptor.
type resourceDescriptor struct {
	Name        string            `json:"name,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Digest      map[string]string `json:"digest,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type slsaProvenance struct {
	BuildDefinition slsaBuildDefinition `json:"buildDefinition"`
	RunDetails      slsaRunDetails      `json:"runDetails"`
}

type slsaBuildDefinition struct {
	BuildType            string               `json:"buildType"`
	ExternalParameters   externalParameters   `json:"externalParameters"`
	ResolvedDependencies []resourceDescriptor `json:"resolvedDependencies"`
}

// externalParameters are everything a user chose that shapes the image:
// the recipe (by digest), the arguments, the modes, the platforms, the
// epoch. With the resolved dependencies they are what a rebuild needs.
type externalParameters struct {
	Recipe          resourceDescriptor `json:"recipe"`
	Image           string             `json:"image"`
	Platform        string             `json:"platform"`
	Platforms       []string           `json:"platforms"`
	Base            string             `json:"base"`
	Args            map[string]string  `json:"args"`
	Modes           map[string]string  `json:"modes"`
	SourceDateEpoch int64              `json:"sourceDateEpoch"`
}

type slsaRunDetails struct {
	Builder  slsaBuilder   `json:"builder"`
	Metadata *slsaMetadata `json:"metadata,omitempty"`
}

type slsaBuilder struct {
	ID      string            `json:"id"`
	Version map[string]string `json:"version,omitempty"`
}

type slsaMetadata struct {
	StartedOn  string `json:"startedOn,omitempty"`
	FinishedOn string `json:"finishedOn,omitempty"`
}

// Provenance returns the image's in-toto Statement with an SLSA
// Provenance v1 predicate. It holds no time unless in.StartedOn or
// in.FinishedOn are set.
func Provenance(in Input) ([]byte, error) {
	g, err := build(&in)
	if err != nil {
		return nil, err
	}
	recipe := sha256Hex(in.Recipe.SHA256)
	if in.Recipe.Name == "" || recipe == "" {
		return nil, fmt.Errorf("sbom: provenance of image %s (%s): the recipe's name and sha256 are needed", in.Image, in.Platform)
	}
	platforms := slices.Clone(in.Platforms)
	if len(platforms) == 0 {
		platforms = []string{in.Platform}
	}
	slices.Sort(platforms)
	args := map[string]string{}
	for k, v := range in.Args {
		args[k] = v
	}
	base := in.Base.Ref
	if g.base != nil {
		base = g.base.name
	}
	p := slsaProvenance{
		BuildDefinition: slsaBuildDefinition{
			BuildType: BuildType,
			ExternalParameters: externalParameters{
				Recipe:          resourceDescriptor{Name: in.Recipe.Name, Digest: map[string]string{"sha256": recipe}},
				Image:           in.Image,
				Platform:        in.Platform,
				Platforms:       slices.Compact(platforms),
				Base:            base,
				Args:            args,
				Modes:           g.modes(),
				SourceDateEpoch: in.epoch().Unix(),
			},
			ResolvedDependencies: g.resolvedDependencies(),
		},
		RunDetails: slsaRunDetails{Builder: slsaBuilder{ID: in.Builder.ID}},
	}
	if p.RunDetails.Builder.ID == "" {
		p.RunDetails.Builder.ID = DefaultBuilderID
	}
	if in.Builder.Version != "" {
		p.RunDetails.Builder.Version = map[string]string{"pallet": in.Builder.Version}
	}
	if !in.StartedOn.IsZero() || !in.FinishedOn.IsZero() {
		p.RunDetails.Metadata = &slsaMetadata{}
		if !in.StartedOn.IsZero() {
			p.RunDetails.Metadata.StartedOn = timestamp(in.StartedOn)
		}
		if !in.FinishedOn.IsZero() {
			p.RunDetails.Metadata.FinishedOn = timestamp(in.FinishedOn)
		}
	}
	return marshal(g.statement(PredicateProvenance, p))
}

// Statement wraps a document (an SPDX or CycloneDX SBOM) in an in-toto
// Statement about the image, as attestation layers carry SBOMs.
func Statement(in Input, predicateType string, predicate []byte) ([]byte, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(predicate)
	if !json.Valid(trimmed) || len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("sbom: statement of image %s (%s): the %s predicate is not a JSON object", in.Image, in.Platform, predicateType)
	}
	g := &graph{in: &in}
	return marshal(g.statement(predicateType, json.RawMessage(trimmed)))
}

// PredicateAbout is the predicate of data, an in-toto Statement, checked
// to be of predicateType and to name the subject with digest alg:hex,
// as an attestation read back from an index must be.
func PredicateAbout(data []byte, alg, hex, predicateType string) (json.RawMessage, error) {
	var st struct {
		statement
		Predicate json.RawMessage `json:"predicate"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("not an in-toto statement: %w", err)
	}
	if st.PredicateType != predicateType {
		return nil, fmt.Errorf("holds a statement of predicate type %s, not %s", st.PredicateType, predicateType)
	}
	var about []string
	for _, s := range st.Subject {
		if s.Digest[alg] == hex {
			if len(st.Predicate) == 0 {
				return nil, errors.New("the statement holds no predicate")
			}
			return st.Predicate, nil
		}
		for a, h := range s.Digest {
			about = append(about, a+":"+h)
		}
	}
	slices.Sort(about)
	if len(about) == 0 {
		about = []string{"nothing"}
	}
	return nil, fmt.Errorf("the statement is about %s, not %s:%s", strings.Join(about, ", "), alg, hex)
}

func (g *graph) statement(predicateType string, predicate any) statement {
	name := g.in.Repository
	if name == "" {
		name = g.in.Image
	}
	return statement{
		Type:          StatementType,
		Subject:       []resourceDescriptor{{Name: name, Digest: map[string]string{"sha256": sha256Hex(g.in.Digest)}}},
		PredicateType: predicateType,
		Predicate:     predicate,
	}
}

// resolvedDependencies lists what the build took in, each with its pin:
// downloads by sha256, commits by gitCommit, Go modules by dirHash (their
// go.sum h1), the base by manifest digest, local inputs by their digests,
// and the Go toolchains; sorted and without repeats.
func (g *graph) resolvedDependencies() []resourceDescriptor {
	var out []resourceDescriptor
	for _, an := range g.arts {
		out = append(out, g.in.artifactDependency(an.a)...)
	}
	if b := g.base; b != nil && b.digest != "" {
		out = append(out, resourceDescriptor{Name: b.name, URI: b.purl, Digest: map[string]string{"sha256": sha256Hex(b.digest)}})
	}
	for _, m := range g.modules {
		if m.main && m.version == "" && !m.local {
			continue // an artifact's own unversioned source, pinned by the artifact
		}
		rd := resourceDescriptor{Name: m.path, URI: goPurl(m.path, m.version)}
		if h := h1Hex(m.sum); h != "" {
			rd.Digest = map[string]string{"dirHash": h}
			rd.Annotations = map[string]string{"goSum": m.sum}
		}
		if m.replaced != "" {
			if rd.Annotations == nil {
				rd.Annotations = map[string]string{}
			}
			rd.Annotations["replaces"] = m.replaced
			if m.local {
				rd.Annotations["replacement"] = "local directory"
			}
		}
		out = append(out, rd)
	}
	toolchains := map[string]bool{}
	for _, s := range g.stdlibs {
		toolchains[s.goVersion] = true
	}
	for _, an := range g.arts {
		if an.a.GoVersion != "" {
			toolchains[an.a.GoVersion] = true
		}
	}
	for v := range toolchains {
		out = append(out, resourceDescriptor{Name: "go toolchain " + v, URI: stdlibPurl(v)})
	}
	// A module both built as an artifact (gomod) and found in its binary
	// is listed once, under the artifact's name, which comes first.
	seen := map[string]bool{}
	unique := out[:0]
	for _, rd := range out {
		k := rd.URI + "\x00" + digestKey(rd.Digest)
		if rd.URI != "" && seen[k] {
			continue
		}
		seen[k] = true
		unique = append(unique, rd)
	}
	slices.SortFunc(unique, func(a, b resourceDescriptor) int { return strings.Compare(rdKey(a), rdKey(b)) })
	return unique
}

// rdKey orders resource descriptors by everything they say.
func rdKey(rd resourceDescriptor) string {
	data, _ := json.Marshal(rd) // maps marshal in key order
	return rd.URI + "\x00" + rd.Name + "\x00" + string(data)
}

func digestKey(d map[string]string) string {
	data, _ := json.Marshal(d)
	return string(data)
}

// artifactDependency is what an artifact took in, pinned.
func (in *Input) artifactDependency(a *Artifact) []resourceDescriptor {
	name := a.Name
	switch {
	case a.URL != "":
		rd := resourceDescriptor{Name: name, URI: remote(a.URL), Digest: map[string]string{"sha256": sha256Hex(a.SHA256)}}
		if rd.URI == "" {
			rd.Annotations = map[string]string{"path": in.localPath(strings.TrimPrefix(a.URL, "file://"))}
		}
		return []resourceDescriptor{rd}
	case a.Repo != "":
		uri := gitLocation(a.Repo, a.Commit)
		rd := resourceDescriptor{Name: name, URI: uri, Digest: map[string]string{"gitCommit": a.Commit}}
		if uri == "" {
			rd.Annotations = map[string]string{"path": in.localPath(strings.TrimPrefix(a.Repo, "file://"))}
		}
		if a.GitPath != "" {
			if rd.Annotations == nil {
				rd.Annotations = map[string]string{}
			}
			rd.Annotations["gitPath"] = a.GitPath
		}
		return []resourceDescriptor{rd}
	case a.Module != "":
		path, version, _ := strings.Cut(a.Module, "@")
		rd := resourceDescriptor{Name: name, URI: goPurl(path, version), Annotations: map[string]string{"goSum": a.SHA256}}
		if a.InModule != "" {
			rd.Annotations["inModule"] = a.InModule
		}
		if h := h1Hex(a.SHA256); h != "" {
			rd.Digest = map[string]string{"dirHash": h}
		}
		return []resourceDescriptor{rd}
	case a.GoVersion != "":
		// A local Go module: no pin but its files, which are the
		// outputs; it is named by its main module.
		var out []resourceDescriptor
		for _, b := range a.Go {
			if b.Main.Path != "" {
				out = append(out, resourceDescriptor{Name: name, URI: goPurl(b.Main.Path, ""), Annotations: map[string]string{"path": in.localPath(a.Path)}})
			}
		}
		return out
	}
	rd := resourceDescriptor{Name: name, Annotations: map[string]string{"path": in.localPath(a.Path)}}
	if a.LocalDir {
		rd.Digest = map[string]string{DigestPalletTree: a.SHA256}
	} else if h := sha256Hex(a.SHA256); h != "" {
		rd.Digest = map[string]string{"sha256": h}
	}
	if rd.Digest == nil {
		return nil
	}
	return []resourceDescriptor{rd}
}
