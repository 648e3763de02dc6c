package dockerfile

import (
	"path/filepath"
	"testing"
)

// FuzzDockerfile: whatever the Dockerfile, planning it returns a plan or
// an error, never a panic.
func FuzzDockerfile(f *testing.F) {
	for _, seed := range []string{
		"FROM scratch\nCOPY a /\n",
		"# escape=`\nARG B=scratch\nFROM --platform=$TARGETPLATFORM ${B} AS x\nCOPY --chmod=755 d/ C:\\x\\\nENV A=1 `\n B=2\n",
		"FROM scratch AS s\nADD a.tar /o/\nWORKDIR /w\nCOPY . .\nFROM s\nCOPY --from=s /o /p\nCOPY --from=0 /w/a /q\nCMD x\nENTRYPOINT [\"y\"]\nEXPOSE 1-3/udp\n",
		"FROM scratch\nCOPY <<EOF /x\nhi\nEOF\n",
		"ARG X\nFROM $X\n",
		"FROM scratch\nLABEL \"a\"=b c=\"d e\"\nUSER 1:2\nSTOPSIGNAL 9\n",
	} {
		f.Add(seed)
	}
	dir := write(f, map[string]string{"a": "a", "d/x": "x", "a.tar": tarOf(f, "t"), ".dockerignore": "d/y\n!d/x\n"})
	f.Fuzz(func(t *testing.T, df string) {
		d, err := Parse(filepath.Join(filepath.Dir(dir), "Dockerfile"), filepath.Dir(dir), []byte(df))
		if err != nil {
			return
		}
		d.Plan(Options{})
	})
}
