package image

import (
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/pallet-dev/pallet/internal/tree"
)

// WindowsBaseView is BaseView for a Windows base: the file system is what
// its layers hold under Files/ (C:\ at run time), without that prefix;
// the registry hives under Hives/, and anything else (a base layer's
// UtilityVM/), are left out. Names are kept as the layers spell them:
// the caller compares them as NTFS does. Its Links are every symlink,
// each to its target as written, unresolved: Windows reads a target
// otherwise than Linux (see the build's windowsView). Foreign
// (non-distributable) layers, which Windows bases such as nanoserver and
// servercore have started with, are never downloaded: what they hold is
// not in the view (ForeignLayers counts them).
func WindowsBaseView(img v1.Image, maxBytes, maxWindow int64) (*tree.View, error) {
	return baseView(img, maxBytes, maxWindow, true)
}

// ForeignLayers counts img's foreign (non-distributable) layers, which
// BaseView and WindowsBaseView do not read.
func ForeignLayers(img v1.Image) int {
	layers, err := img.Layers()
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range layers {
		if mt, err := l.MediaType(); err == nil && !mt.IsDistributable() {
			n++
		}
	}
	return n
}

// windowsFiles maps a Windows layer's tar name to the path it stands for
// under C:\, or skips it.
func windowsFiles(name string) (string, bool) {
	first, rest, _ := strings.Cut(strings.TrimPrefix(name, "/"), "/")
	if !strings.EqualFold(first, "Files") || strings.Trim(rest, "/") == "" {
		return "", false
	}
	return rest, true
}
