package recipe

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/image"
)

const configRecipe = `version: 1
args:
  V: "1.0"
artifacts:
  agent: {local: {path: ./agent}, licenses: none}
images:
  agent:
    base: {linux: scratch, windows: windows-hostprocess-scratch}
    platforms: [linux/amd64, linux/arm64, windows/amd64]
    files:
      - {artifact: agent, dest: /k/}
    config:
      entrypoint: ["/k/agent{{exe}}"]
      env: [MODE=node, LEVEL=2]
      labels: {org.opencontainers.image.version: "{{V}}", os: any}
      ports: ["8080"]
      for:
        windows:
          env: ['PATH=C:\k;C:\Windows\system32']
          workdir: 'C:\k'
          labels: {os: windows}
        linux/arm64:
          cmd: [--arm]
          env: [LEVEL=3]
          ports: [9090/udp]
        linux:
          user: "65532"
          cmd: []
`

// Each platform gets the image's config with its OS's section laid over
// it, then its platform's: lists replaced, env and ports added to, labels
// merged; {{exe}} is .exe on Windows.
func TestConfigPerPlatform(t *testing.T) {
	r, err := Parse("pallet.yaml", []byte(configRecipe))
	if err != nil {
		t.Fatal(err)
	}
	schema := compileSchema(t)
	if err := schema.Validate(yamlToJSONValue(t, []byte(configRecipe))); err != nil {
		t.Errorf("schema: %v", err)
	}
	// What the parser refuses, the schema does.
	for _, edit := range [][2]string{
		{"        windows:\n", "        macos:\n"},
		{"          cmd: []\n", "          cmd: []\n          for: {linux/amd64: {cmd: [x]}}\n"},
		{"        linux:\n          user: \"65532\"\n          cmd: []\n", "        linux:\n"},
	} {
		bad := strings.Replace(configRecipe, edit[0], edit[1], 1)
		if err := schema.Validate(yamlToJSONValue(t, []byte(bad))); err == nil {
			t.Errorf("schema accepted:\n%s", bad)
		}
	}
	p, err := r.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]image.Config{}
	for _, pi := range p.Images[0].Platforms {
		got[pi.Platform.String()] = pi.Config
	}
	want := map[string]image.Config{
		"linux/amd64": {Entrypoint: []string{"/k/agent"}, Cmd: []string{}, Env: []string{"MODE=node", "LEVEL=2"}, User: "65532",
			Labels: map[string]string{"org.opencontainers.image.version": "1.0", "os": "any"}, ExposedPorts: []string{"8080"}},
		"linux/arm64": {Entrypoint: []string{"/k/agent"}, Cmd: []string{"--arm"}, Env: []string{"MODE=node", "LEVEL=2", "LEVEL=3"}, User: "65532",
			Labels: map[string]string{"org.opencontainers.image.version": "1.0", "os": "any"}, ExposedPorts: []string{"8080", "9090/udp"}},
		"windows/amd64": {Entrypoint: []string{"/k/agent.exe"}, Env: []string{"MODE=node", "LEVEL=2", `PATH=C:\k;C:\Windows\system32`}, Workdir: `C:\k`,
			Labels: map[string]string{"org.opencontainers.image.version": "1.0", "os": "windows"}, ExposedPorts: []string{"8080"}},
	}
	for pl, w := range want {
		if !reflect.DeepEqual(got[pl], w) {
			t.Errorf("%s:\n got %#v\nwant %#v", pl, got[pl], w)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	checkEdits(t, configRecipe, []editCase{
		{"unknown os", "        windows:\n", "        widows:\n", 18, `unknown OS "widows"`},
		{"no such platform", "        linux/arm64:\n", "        linux/arm/v7:\n", 22, "config.for.linux/arm/v7 names none of the image's platforms (linux/amd64, linux/arm64, windows/amd64)"},
		{"a slip for a platform", "        linux/arm64:\n", "        linux/arm:\n", 22, "config.for.linux/arm names none of the image's platforms (linux/amd64, linux/arm64, windows/amd64) (did you mean linux/arm64?)"},
		{"nested", "          cmd: []\n", "          cmd: []\n          for: {linux/amd64: {cmd: [x]}}\n", 29, "has no sections of its own"},
		{"empty section", "        linux:\n          user: \"65532\"\n          cmd: []\n", "        linux:\n", 26, "config.for.linux is empty"},
		{"bad env", "PATH=C:", "PATH", 19, "is not K=V"},
		{"bad port", "[9090/udp]", "[9090/icmp]", 25, "9090/icmp"},
		{"unknown field", "          workdir: 'C:\\k'\n", "          workdir: 'C:\\k'\n          entrypont: [x]\n", 21, "field entrypont not found; did you mean entrypoint?"},
		{"undeclared var", "cmd: [--arm]", `cmd: ["--{{W}}"]`, 23, "W"},
		// A runtime reads the stop signal when it stops the container, and
		// one it does not know fails the stop: refused where it is given.
		{"unknown stop signal", "      ports: [\"8080\"]\n", "      ports: [\"8080\"]\n      stopSignal: SIGFOO\n", 17, `stop signal "SIGFOO" is no signal the runtime knows`},
		// Values a Linux runtime cannot start the container with.
		{"relative workdir on Linux", "          user: \"65532\"\n", "          user: \"65532\"\n          workdir: app\n", 28, `image agent on linux/amd64: workdir "app" is not an absolute path`},
		{"user with two colons", `user: "65532"`, `user: "a:b:c"`, 27, `user "a:b:c" is not user[:group]`},
		{"env without a name", "env: [MODE=node, LEVEL=2]", "env: [MODE=node, =2]", 14, `image agent on linux/amd64: env entry "=2" has no variable name`},
		{"a NUL byte", `cmd: [--arm]`, `cmd: ["--a\0rm"]`, 23, "holds a NUL byte"},
		{"a NUL byte from an arg", `  V: "1.0"`, `  V: "1\0"`, 15, "holds a NUL byte"},
		{"real-time stop signal on Windows", "          labels: {os: windows}\n", "          labels: {os: windows}\n          stopSignal: SIGRTMIN+3\n", 22, "(windows)"},
	})
}

// A base that is no kind pallet takes is refused at its line before it is
// taken for a registry name: "file:///x" and "../x" would be looked up on
// the hosts "file:" and "..".
func TestBaseNotAReference(t *testing.T) {
	checkEdits(t, configRecipe, []editCase{
		{"a file URL", "{linux: scratch,", "{linux: \"file:///etc/passwd\",", 8, `base "file:///etc/passwd" is not scratch, windows-hostprocess-scratch, windows-hostprocess-scratch-v1, oci:PATH[:TAG] or a registry reference`},
		{"a path", "{linux: scratch,", "{linux: ../images/base,", 8, "or a registry reference (invalid reference format)"},
	})
}

// --platform takes an OS for every platform of it the images have.
func TestPlatformSelectionByOS(t *testing.T) {
	r, err := Parse("pallet.yaml", []byte(configRecipe))
	if err != nil {
		t.Fatal(err)
	}
	for sel, want := range map[string]string{
		"linux":                   "linux/amd64 linux/arm64",
		"windows":                 "windows/amd64",
		"windows,linux/arm64":     "linux/arm64 windows/amd64",
		"linux/amd64,linux/amd64": "linux/amd64",
	} {
		p, err := r.Plan(Options{Platforms: []string{sel}})
		if err != nil {
			t.Errorf("%s: %v", sel, err)
			continue
		}
		var got []string
		for _, pi := range p.Images[0].Platforms {
			got = append(got, pi.Platform.String())
		}
		if strings.Join(got, " ") != want {
			t.Errorf("--platform %s: %v, want %s", sel, got, want)
		}
	}
	for sel, want := range map[string]string{"macos": `unknown OS "macos"`, "linux,": "empty platform", "freebsd/amd64": "unknown platform"} {
		if _, err := r.Plan(Options{Platforms: []string{sel}}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--platform %s: %v, want %q", sel, err, want)
		}
	}
}
