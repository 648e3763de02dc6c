package image

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Config is what pallet sets on the image config. Nil slices and empty
// strings inherit from the base; a non-nil empty slice clears the value.
type Config struct {
	Entrypoint, Cmd []string
	Env             []string
	Workdir, User   string
	Labels          map[string]string
	ExposedPorts    []string
	StopSignal      string
	// Variant, when set, is the platform variant the config says, where
	// the base's says a lower one: a linux/amd64/v3 image built on a
	// plain amd64 base runs only where v3 does.
	Variant string
}

// Layer is a layer with the line recorded in the image history.
type Layer struct {
	v1.Layer
	CreatedBy string
}

// Assemble appends layers to base and applies cfg. Every timestamp is
// epoch, so equal inputs give equal digests.
func Assemble(base v1.Image, layers []Layer, cfg Config, epoch time.Time) (v1.Image, error) {
	mt, err := base.MediaType()
	if err != nil {
		return nil, err
	}
	// Layers follow the base manifest's flavour: an OCI layer in a Docker
	// v2 manifest is rejected by some registries and runtimes.
	var layerType types.MediaType
	if mt == types.DockerManifestSchema2 {
		layerType = types.DockerLayer
	}
	adds := make([]mutate.Addendum, 0, len(layers))
	for _, l := range layers {
		a := mutate.Addendum{
			Layer: l.Layer,
			History: v1.History{
				Created:   v1.Time{Time: epoch},
				CreatedBy: l.CreatedBy,
				Comment:   "pallet",
			},
		}
		if layerType != "" {
			lt, err := l.MediaType()
			if err != nil {
				return nil, err
			}
			if lt == types.OCILayerZStd {
				return nil, fmt.Errorf("zstd layers need an OCI base manifest; the base is %s", mt)
			}
			// The layer itself says the type too, so that what the
			// manifest lists and what the layer reports agree (a pusher
			// or validator reads either).
			a.Layer = typedLayer{Layer: l.Layer, mediaType: layerType}
			a.MediaType = layerType
		}
		adds = append(adds, a)
	}
	img, err := mutate.Append(base, adds...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	apply(&cf.Config, cfg, cf.OS == "windows")
	if cfg.Variant != "" {
		cf.Variant = cfg.Variant
	}
	cf.Created = v1.Time{Time: epoch}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	// The front ends refuse what makes a config too large at its line;
	// this is the guard for whatever adds up past them (a large base
	// config, many layers' history, escaping in the JSON).
	raw, err := img.RawConfigFile()
	if err != nil {
		return nil, err
	}
	if len(raw) > DefaultMaxManifestSize {
		hist := 0
		for _, h := range cf.History {
			hist += len(h.CreatedBy) + len(h.Comment)
		}
		return nil, fmt.Errorf("the image config would be %d bytes, %d of them the history (each layer's lists what it places); at most %d are allowed (pallet reads no larger config from a base, nor does containerd): shorten the env, labels or command, or place fewer files or shorter paths", len(raw), hist, DefaultMaxManifestSize)
	}
	return img, nil
}

// typedLayer is a layer under another media type of the same bytes
// (Docker's name for a gzip tar where the OCI one was written).
type typedLayer struct {
	v1.Layer
	mediaType types.MediaType
}

func (l typedLayer) MediaType() (types.MediaType, error) { return l.mediaType, nil }

func apply(c *v1.Config, cfg Config, windows bool) {
	// An empty list clears the base's value. The config JSON omits empty
	// lists, so it is nil here too: the image's config as held and as
	// written must be the same.
	if cfg.Entrypoint != nil && len(cfg.Entrypoint) == 0 {
		cfg.Entrypoint, c.Entrypoint = nil, nil
		if cfg.Cmd == nil {
			c.Cmd = nil
		}
	}
	if cfg.Cmd != nil && len(cfg.Cmd) == 0 {
		cfg.Cmd, c.Cmd = nil, nil
	}
	if cfg.Entrypoint != nil {
		c.Entrypoint = cfg.Entrypoint
		// As in a Dockerfile, a new entrypoint drops the base's cmd,
		// which was written for the old one.
		if cfg.Cmd == nil {
			c.Cmd = nil
		}
	}
	if cfg.Cmd != nil {
		c.Cmd = cfg.Cmd
	}
	c.Env = SetEnvs(c.Env, cfg.Env, windows)
	if cfg.Workdir != "" {
		c.WorkingDir = cfg.Workdir
	}
	if cfg.User != "" {
		c.User = cfg.User
	}
	if len(cfg.Labels) > 0 {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		for k, v := range cfg.Labels {
			c.Labels[k] = v
		}
	}
	if len(cfg.ExposedPorts) > 0 {
		if c.ExposedPorts == nil {
			c.ExposedPorts = map[string]struct{}{}
		}
		for _, p := range cfg.ExposedPorts {
			if !strings.Contains(p, "/") {
				p += "/tcp"
			}
			c.ExposedPorts[p] = struct{}{}
		}
	}
	if cfg.StopSignal != "" {
		c.StopSignal = cfg.StopSignal
	}
}

// SetEnv sets the variable kv (NAME=VALUE) in env: it replaces one of the
// same name where it stands, keeping env's order, or is appended. On
// Windows, names that differ only in case are one variable (a base's PATH
// is the recipe's Path), so there they are compared without case and the
// new spelling is kept, as BuildKit's addEnv does. BuildKit compares
// without case when it runs on Windows; pallet does for a Windows image,
// wherever it runs, since the Windows host running the image is what
// reads the names. Like append, it may write into env's array.
func SetEnv(env []string, kv string, windows bool) []string {
	k, _, _ := strings.Cut(kv, "=")
	if i := envIndex(env, k, windows); i >= 0 {
		env[i] = kv
		return env
	}
	return append(env, kv)
}

// SetEnvs sets each of kvs in env as SetEnv does one after another, in
// time linear in their lengths: SetEnv looks through env for each, and a
// recipe's 200,000 variables (a 2 MB recipe) held its image for minutes,
// as did a few thousand on a base config of 500,000. Like append, it may
// write into env's array.
func SetEnvs(env, kvs []string, windows bool) []string {
	if len(kvs) == 0 {
		return env
	}
	key := func(name string) string { return name }
	if windows {
		key = foldedName
	}
	// The first entry of a name is the one SetEnv replaces.
	at := make(map[string]int, len(env)+len(kvs))
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		k := key(name)
		if _, ok := at[k]; !ok {
			at[k] = i
		}
	}
	for _, kv := range kvs {
		name, _, _ := strings.Cut(kv, "=")
		k := key(name)
		if i, ok := at[k]; ok {
			env[i] = kv
			continue
		}
		at[k] = len(env)
		env = append(env, kv)
	}
	return env
}

// foldedName is one spelling of the names strings.EqualFold takes for
// name (SameEnvName on Windows): each rune becomes the least of those
// simple case folding takes for it, and invalid UTF-8 the replacement
// character, as EqualFold decodes it.
func foldedName(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// LookupEnv is the value of variable k in env (NAME=VALUE entries), by
// SetEnv's rule for which names are one.
func LookupEnv(env []string, k string, windows bool) (string, bool) {
	if i := envIndex(env, k, windows); i >= 0 {
		_, v, _ := strings.Cut(env[i], "=")
		return v, true
	}
	return "", false
}

// envIndex is the index of variable k in env, or -1.
func envIndex(env []string, k string, windows bool) int {
	for i, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); SameEnvName(name, k, windows) {
			return i
		}
	}
	return -1
}

// SameEnvName reports whether a and b name one environment variable: on
// Windows whatever their case (see SetEnv).
func SameEnvName(a, b string, windows bool) bool {
	return a == b || windows && strings.EqualFold(a, b)
}

// Index gathers per-platform images into an OCI index. The entry platform
// comes from each image's config, os.version included when the base had
// one, so runtimes pick the right manifest per host.
func Index(imgs []v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	adds := make([]mutate.IndexAddendum, 0, len(imgs))
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		p := PlatformOf(cf)
		mt, err := img.MediaType()
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: NotArtifact(img), Descriptor: v1.Descriptor{MediaType: mt, Platform: p}})
	}
	return mutate.AppendManifests(idx, adds...), nil
}

// PlatformOf is the platform an entry for an image with config cf
// names: os.version and os.features too, when the base had them, so a
// runtime picks the manifest its host can run (a Windows host matches
// os.version; os.features such as "win32k" say what the image needs).
// The index and a layout's single-image entry both take it from here,
// so the same image is described the same way in either.
func PlatformOf(cf *v1.ConfigFile) *v1.Platform {
	return &v1.Platform{
		OS:           cf.OS,
		Architecture: cf.Architecture,
		Variant:      cf.Variant,
		OSVersion:    cf.OSVersion,
		OSFeatures:   cf.OSFeatures,
	}
}

// NotArtifact is img with no artifact type: go-containerregistry gives an
// image's index entry one, the config's media type, where the image spec
// reserves the field for artifacts; an image is not one, and BuildKit's
// and docker's indexes name none (nor do a layout's entries, see
// output's describeImage).
func NotArtifact(img v1.Image) v1.Image { return notArtifact{img} }

type notArtifact struct{ v1.Image }

// ArtifactType is what partial.Descriptor asks before it falls back on
// the config's media type.
func (notArtifact) ArtifactType() (string, error) { return "", nil }
