// Package version holds the version stamped in by the build's ldflags.
package version

// Version is set with -X example.com/antrea/version.Version=...
var Version = "dev"
