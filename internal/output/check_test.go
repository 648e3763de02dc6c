package output

import (
	"strings"
	"testing"
)

func TestCheckImages(t *testing.T) {
	one := []Planned{{Repository: "app", Tags: []string{"v1"}, Manifests: 1}}
	for _, tc := range []struct {
		name   string
		target Target
		images []Planned
		want   string // "" for accepted
	}{
		{"archive, one platform", &DockerArchive{File: "x.tar"}, one, ""},
		{"archive, two platforms", &DockerArchive{File: "x.tar"}, []Planned{{Repository: "app", Tags: []string{"v1"}, Manifests: 2}}, "would have 2 platforms"},
		{"archive, upper-case repository", &DockerArchive{File: "x.tar"}, []Planned{{Repository: "App", Tags: []string{"v1"}, Manifests: 1}}, "App:v1 is not a name"},
		{"archive, bad tag", &DockerArchive{File: "x.tar"}, []Planned{{Repository: "app", Tags: []string{"v1/x"}, Manifests: 1}}, "app:v1/x is not a name"},
		{"registry repo, one image", &Registry{Ref: "localhost:5000/app"}, one, ""},
		{"registry repo with tag", &Registry{Ref: "localhost:5000/app:v2"}, one, ""},
		{"registry repo, two images", &Registry{Ref: "localhost:5000/app"}, []Planned{one[0], {Repository: "b", Tags: []string{"v1"}, Manifests: 1}}, "names one repository but the build has 2 images"},
		{"registry upper-case", &Registry{Ref: "localhost:5000/Foo/Bar"}, one, "could not parse reference"},
		{"prefix", &Registry{Ref: "localhost:5000/team/"}, []Planned{one[0], {Repository: "b", Tags: []string{"v1"}, Manifests: 2}}, ""},
		{"prefix, upper-case repository", &Registry{Ref: "localhost:5000/team/"}, []Planned{{Repository: "App", Tags: []string{"v1"}, Manifests: 1}}, "registry:localhost:5000/team/"},
		{"prefix, repository with a host", &Registry{Ref: "localhost:5000/team/"}, []Planned{{Repository: "ghcr.io/org/app", Tags: []string{"v1"}, Manifests: 1}}, "names a registry host"},
		{"prefix, repository with localhost", &Registry{Ref: "localhost:5000/"}, []Planned{{Repository: "localhost/app", Tags: []string{"v1"}, Manifests: 1}}, "names a registry host"},
		{"prefix, path that is no host", &Registry{Ref: "localhost:5000/"}, []Planned{{Repository: "org/app", Tags: []string{"v1"}, Manifests: 1}}, ""},
		{"by digest, tag given", &Registry{Ref: "localhost:5000/app:v1", ByDigest: true}, one, "a push by digest sets no tag"},
		{"layout, many platforms", &Layout{Dir: "out"}, []Planned{{Repository: "app", Tags: []string{"v1"}, Manifests: 3}}, ""},
		// Written as docker.io/library/NAME, a name of one component
		// of 248 characters or more has a path over 255; a namespace
		// with no host in it is part of docker.io's path.
		{"layout, a name in full over 255", &Layout{Dir: "out"}, []Planned{{Repository: strings.Repeat("a", 248), Tags: []string{"v1"}, Manifests: 1}}, "is not an image reference: repository name must not be more than 255 characters, as docker and containerd read it in full"},
		{"layout, a name in full of 255", &Layout{Dir: "out"}, []Planned{{Repository: strings.Repeat("a", 247), Tags: []string{"v1"}, Manifests: 1}}, ""},
		{"layout, a namespaced name in full over 255", &Layout{Dir: "out"}, []Planned{{Repository: "team/" + strings.Repeat("a", 251), Tags: []string{"v1"}, Manifests: 1}}, "must not be more than 255"},
		{"layout, a name with a host of 255", &Layout{Dir: "out"}, []Planned{{Repository: "example.com/" + strings.Repeat("a", 255), Tags: []string{"v1"}, Manifests: 1}}, ""},
		{"archive, a name in full over 255", &DockerArchive{File: "x.tar"}, []Planned{{Repository: strings.Repeat("a", 250), Tags: []string{"v1"}, Manifests: 1}}, "must not be more than 255"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckImages([]Target{tc.target}, tc.images)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}
