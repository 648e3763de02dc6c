package dockerfile

import (
	"reflect"
	"testing"
)

// TestWindowsDestinationDirectory checks that a file copied, in a Windows
// stage, to a name without a trailing \ goes into the directory there, as
// BuildKit copies it: one of the built-in base, or one an earlier COPY of
// the stage made, whatever the case it is written in (Windows names are
// one whatever their case); on another base, the build decides
// (IntoDirAs).
func TestWindowsDestinationDirectory(t *testing.T) {
	files := map[string]string{"f.txt": "f", "g": "g", "d/x": "x"}
	const hpc = "# escape=`\nFROM windows-hostprocess-scratch\n"
	cases := []windowsCase{
		{"a directory of the built-in base", hpc + `COPY f.txt C:\Windows\System32`,
			[]string{"/Windows/System32/<-local:f.txt"}},
		{"a directory of the built-in base, in another case", hpc + `COPY f.txt c:\windows\SYSTEM32\Config`,
			[]string{"/Windows/System32/config/<-local:f.txt"}},
		{"a name the built-in base does not hold", hpc + `COPY f.txt C:\Windows\f`,
			[]string{"/Windows/f<-local:f.txt"}},
		{"a directory an earlier COPY made, in another case", hpc + "COPY d C:\\k\nCOPY g C:\\K",
			[]string{"/k/<-local:d", "/k/<-local:g"}},
		{"below it, in another case", hpc + "COPY d C:\\k\\Data\\\nCOPY g C:\\K\\data",
			[]string{"/k/Data/<-local:d", "/k/Data/<-local:g"}},
		{"a file of another case is replaced under its spelling", hpc + "COPY f.txt C:\\k\\f\nCOPY g C:\\K\\F",
			[]string{"/k/f<-local:f.txt", "/k/f<-local:g"}},
		{"another base: the build decides", "# escape=`\nFROM --platform=windows/amd64 oci:base\nCOPY f.txt C:\\Windows\\System32",
			[]string{"/Windows/System32 into=f.txt<-local:f.txt"}},
	}
	planWindowsCases(t, files, cases)
}

// TestWindowsStageNamesFold checks that a Windows stage's WORKDIR and a
// COPY --from of it name what the stage holds whatever their case.
func TestWindowsStageNamesFold(t *testing.T) {
	files := map[string]string{"g": "g", "d/x": "x"}
	cases := []windowsCase{
		{"a COPY to . goes into the WORKDIR of another case", "# escape=`\nFROM windows-hostprocess-scratch\nCOPY d C:\\k\\\nWORKDIR C:\\K\nCOPY g .",
			[]string{"/k/<-local:d", "/k/<-local:g"}},
		{"a COPY --from names the stage's file in another case", "# escape=`\nFROM windows-hostprocess-scratch AS w\nCOPY g C:\\k\\G\nFROM windows-hostprocess-scratch\nCOPY --from=w C:\\K\\g C:\\out\\",
			[]string{"/out/G<-local:g"}},
	}
	planWindowsCases(t, files, cases)
}

// windowsCase is a Dockerfile planned for windows/amd64 and the
// placements it should give.
type windowsCase struct {
	name, df string
	want     []string
}

func planWindowsCases(t *testing.T, files map[string]string, cases []windowsCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := map[string]string{"Dockerfile": tc.df + "\n"}
			for k, v := range files {
				fs[k] = v
			}
			p := mustPlan(t, fs, Options{Platforms: []string{"windows/amd64"}})
			if got := placements(t, p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("layers\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
