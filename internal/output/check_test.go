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
		{"layout takes any names", &Layout{Dir: "out"}, []Planned{{Repository: "App", Tags: []string{"v1"}, Manifests: 3}}, ""},
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
