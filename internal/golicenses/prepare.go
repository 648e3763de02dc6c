package golicenses

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"

	"golang.org/x/mod/modfile"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/bounded"
)

// errNotRemembered is the derive Prepare hands Options.Remember: it asks
// whether a classification is kept without making one.
var errNotRemembered = errors.New("golicenses: classification not remembered")

// loadClassifier starts loading the classifier without waiting for it;
// Collect's first classification then waits for that load, not a new one.
var loadClassifier = func() { go defaultClassifier() }

// Prepare starts loading the classifier in the background when Collect
// will classify a licence text of the main module in opt.SourceDir that
// opt.Remember keeps no classification of (or there is no Remember).
// Called as the Go build starts, the load (about a second of CPU) runs
// while the go command compiles and links instead of after it, when
// Collect reads the binary. A build whose main module's texts were all
// seen loads nothing, as Collect would not: only a dependency's new text
// then loads the classifier, when Collect meets it.
//
// Remember may keep a text it is asked about (it does so before deriving);
// Collect would keep it all the same.
func Prepare(opt Options) {
	opt = opt.withDefaults()
	if opt.SourceDir == "" {
		return
	}
	files, err := readDirLicenses(opt.SourceDir, "main module", opt, nil)
	if err != nil {
		return // Collect reports it
	}
	deps := !RequiresNone(opt.SourceDir)
	for _, text := range files {
		if isRemembered(opt, text) {
			continue
		}
		// A text the quick corpus answers needs no load for itself; but
		// one this cache has not seen says that the modules the binary
		// links are likely new to it too, and some of their texts will
		// want the whole corpus: loaded now, while go build runs, not
		// after it.
		if !deps {
			if _, quick := quickClassify(text); quick {
				continue
			}
		}
		loadClassifier()
		return
	}
}

// RequiresNone says the module in dir requires no other module: its
// binaries link none, and no licence of another module is collected.
// False where go.mod cannot be read, for the caller to take the longer
// way.
func RequiresNone(dir string) bool {
	path := filepath.Join(dir, "go.mod")
	data, err := bounded.ReadFile(path, artifact.MaxGoMod)
	if err != nil {
		return false
	}
	f, err := modfile.ParseLax(path, data, nil)
	return err == nil && len(f.Require) == 0
}

// isRemembered says whether Collect would take text's classification
// from opt.Remember rather than classify it.
func isRemembered(opt Options, text []byte) bool {
	if opt.Remember == nil {
		return false
	}
	sum := sha256.Sum256(text)
	v, err := opt.Remember(hex.EncodeToString(sum[:]), text, func() (string, error) { return "", errNotRemembered })
	if err != nil {
		return false
	}
	_, ok := recalled(v)
	return ok
}
