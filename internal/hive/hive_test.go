package hive

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/layer"
)

var names = []string{"DEFAULT", "SAM", "SECURITY", "SOFTWARE", "SYSTEM"}

// parsed is what checkHive reads back from a hive, independently of how
// Minimal wrote it.
type parsed struct {
	rootName   string
	timestamps []uint64 // base block, bin, root key
	security   *layer.SecurityInfo
}

// checkHive reads b as the regf format defines it and returns an error for
// anything Windows' loader would reject: signatures, versions, the
// checksum, bin and cell sizes that tile the bin exactly, the root key and
// its security cell and their cross references.
func checkHive(b []byte) (*parsed, error) {
	le := binary.LittleEndian
	if len(b) != 2*blockSize {
		return nil, fmt.Errorf("%d bytes, want a base block and one bin", len(b))
	}
	switch {
	case string(b[:4]) != "regf":
		return nil, fmt.Errorf("signature %q", b[:4])
	case le.Uint32(b[offSequence1:]) != le.Uint32(b[offSequence2:]):
		return nil, fmt.Errorf("sequence numbers differ: the hive looks unsynced")
	case le.Uint32(b[offMajorVersion:]) != 1 || le.Uint32(b[offMinorVersion:]) < 3 || le.Uint32(b[offMinorVersion:]) > 6:
		return nil, fmt.Errorf("version %d.%d", le.Uint32(b[offMajorVersion:]), le.Uint32(b[offMinorVersion:]))
	case le.Uint32(b[offFileType:]) != 0 || le.Uint32(b[offFileFormat:]) != 1 || le.Uint32(b[offClustering:]) != 1:
		return nil, fmt.Errorf("type/format/clustering %d/%d/%d", le.Uint32(b[offFileType:]), le.Uint32(b[offFileFormat:]), le.Uint32(b[offClustering:]))
	case int(le.Uint32(b[offHiveBinsSize:])) != len(b)-blockSize:
		return nil, fmt.Errorf("hive bins size %d in a %d-byte file", le.Uint32(b[offHiveBinsSize:]), len(b))
	}
	var x uint32
	for i := 0; i < 0x1FC; i += 4 {
		x ^= le.Uint32(b[i:])
	}
	if got := le.Uint32(b[0x1FC:]); got != x || x == 0 || x == 0xFFFFFFFF {
		return nil, fmt.Errorf("checksum %#x, XOR of the header is %#x", got, x)
	}
	for i := 0x200; i < blockSize; i++ {
		if b[i] != 0 {
			return nil, fmt.Errorf("base block byte %#x is %#x, want 0", i, b[i])
		}
	}
	bin := b[blockSize:]
	if string(bin[:4]) != "hbin" || le.Uint32(bin[4:]) != 0 || le.Uint32(bin[8:]) != blockSize {
		return nil, fmt.Errorf("bin header % x", bin[:12])
	}
	cells := map[int][]byte{} // allocated cells by offset, without the size field
	for off := binHeaderSize; off < blockSize; {
		size := int32(le.Uint32(bin[off:]))
		n := int(size)
		if size < 0 {
			n = -n
			cells[off] = bin[off+4 : off+n]
		}
		if n < 8 || n%8 != 0 || off+n > blockSize {
			return nil, fmt.Errorf("cell at %#x has size %d", off, size)
		}
		off += n
	}
	root := int(le.Uint32(b[offRootCell:]))
	nk, ok := cells[root]
	if !ok || string(nk[:2]) != "nk" {
		return nil, fmt.Errorf("root cell %#x is not an allocated nk", root)
	}
	nameLen := int(le.Uint16(nk[offNkNameLength:]))
	switch {
	case le.Uint16(nk[offNkFlags:])&keyHiveEntry == 0:
		return nil, fmt.Errorf("root key lacks KEY_HIVE_ENTRY")
	case nameLen == 0 || nkFixedSize+nameLen > len(nk):
		return nil, fmt.Errorf("root key name of %d bytes in a %d-byte cell", nameLen, len(nk)+4)
	case le.Uint32(nk[offNkSubkeys:]) != 0 || le.Uint32(nk[offNkValues:]) != 0:
		return nil, fmt.Errorf("root key has subkeys or values")
	case le.Uint32(nk[offNkSubkeyList:]) != cellNil || le.Uint32(nk[offNkValueList:]) != cellNil || le.Uint32(nk[offNkClass:]) != cellNil:
		return nil, fmt.Errorf("root key lists point somewhere")
	}
	skOff := int(le.Uint32(nk[offNkSecurity:]))
	sk, ok := cells[skOff]
	if !ok || string(sk[:2]) != "sk" {
		return nil, fmt.Errorf("security cell %#x is not an allocated sk", skOff)
	}
	sdLen := int(le.Uint32(sk[offSkLength:]))
	switch {
	case int(le.Uint32(sk[offSkFlink:])) != skOff || int(le.Uint32(sk[offSkBlink:])) != skOff:
		return nil, fmt.Errorf("the only sk cell does not link to itself")
	case le.Uint32(sk[offSkReferences:]) != 1:
		return nil, fmt.Errorf("sk reference count %d, one key uses it", le.Uint32(sk[offSkReferences:]))
	case skFixedSize+sdLen > len(sk):
		return nil, fmt.Errorf("security descriptor of %d bytes in a %d-byte cell", sdLen, len(sk)+4)
	case len(cells) != 2:
		return nil, fmt.Errorf("%d allocated cells, want the nk and the sk", len(cells))
	}
	sec, err := layer.ParseSecurityDescriptor(sk[skFixedSize : skFixedSize+sdLen])
	if err != nil {
		return nil, fmt.Errorf("root key security: %w", err)
	}
	return &parsed{
		rootName:   string(nk[nkFixedSize : nkFixedSize+nameLen]),
		timestamps: []uint64{le.Uint64(b[offBaseTimestamp:]), le.Uint64(bin[offBinTimestamp:]), le.Uint64(nk[offNkTimestamp:])},
		security:   sec,
	}, nil
}

func TestMinimalStructure(t *testing.T) {
	epoch := time.Unix(1700000000, 0)
	for _, name := range names {
		b, err := Minimal(name, epoch)
		if err != nil {
			t.Fatal(err)
		}
		p, err := checkHive(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.rootName != name {
			t.Errorf("%s: root key named %q", name, p.rootName)
		}
		// FILETIME of 2023-11-14T22:13:20Z: seconds since 1601 times 10^7.
		want := uint64(1700000000+11644473600) * 10000000
		for i, ts := range p.timestamps {
			if ts != want {
				t.Errorf("%s: timestamp %d is %d, want %d", name, i, ts, want)
			}
		}
		if got := p.security.SDDL(); got != RootSDDL {
			t.Errorf("%s: root key security %s, want %s", name, got, RootSDDL)
		}
		for _, sid := range append([]string{p.security.Owner, p.security.Group}, keys(p.security.Grants)...) {
			if sid != "S-1-5-18" && !strings.HasPrefix(sid, "S-1-5-32-") {
				t.Errorf("%s: SID %s is not a well-known one", name, sid)
			}
		}
		// A domain or machine SID starts S-1-5-21: revision 1, any count,
		// authority 5, first sub-authority 21.
		if i := bytes.Index(b, []byte{0, 0, 0, 0, 0, 5, 21, 0, 0, 0}); i >= 0 {
			t.Errorf("%s: an S-1-5-21 SID at byte %#x", name, i-2)
		}
	}
}

func keys(m map[string]uint32) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The bytes depend on the name and time only, and a zero time gives zero
// timestamps rather than a FILETIME before 1601.
func TestMinimalDeterministic(t *testing.T) {
	a, _ := Minimal("SYSTEM", time.Unix(0, 0))
	b, _ := Minimal("SYSTEM", time.Unix(0, 0))
	if !bytes.Equal(a, b) {
		t.Fatal("two hives from the same input differ")
	}
	p, err := checkHive(a)
	if err != nil {
		t.Fatal(err)
	}
	if p.timestamps[0] != 116444736000000000 {
		t.Errorf("the Unix epoch is FILETIME %d, want 116444736000000000", p.timestamps[0])
	}
	z, err := Minimal("SYSTEM", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if p, err = checkHive(z); err != nil {
		t.Fatal(err)
	}
	for i, ts := range p.timestamps {
		if ts != 0 {
			t.Errorf("zero time: timestamp %d is %d", i, ts)
		}
	}
}

// The checker is not vacuous: each damage is reported.
func TestCheckHiveRejectsDamage(t *testing.T) {
	good, err := Minimal("SYSTEM", time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	root := blockSize + binHeaderSize
	for name, damage := range map[string]func(b []byte){
		"checksum":   func(b []byte) { b[offChecksum] ^= 1 },
		"cell size":  func(b []byte) { binary.LittleEndian.PutUint32(b[root:], uint32(0xFFFFFFA0)) },
		"sk offset":  func(b []byte) { binary.LittleEndian.PutUint32(b[root+4+offNkSecurity:], 0x200) },
		"free size":  func(b []byte) { binary.LittleEndian.PutUint32(b[len(b)-blockSize+0x110:], 0xE00) },
		"references": func(b []byte) { b[bytes.Index(b, []byte("sk\x00\x00"))+offSkReferences] = 2 },
	} {
		b := bytes.Clone(good)
		damage(b)
		if _, err := checkHive(b); err == nil {
			t.Errorf("%s: damaged hive accepted", name)
		}
	}
}

func TestMinimalRefusesNames(t *testing.T) {
	for _, name := range []string{"", strings.Repeat("K", 256), "a\\b", "Système", "tab\there"} {
		if _, err := Minimal(name, time.Time{}); err == nil {
			t.Errorf("%q accepted as a root key name", name)
		}
	}
}

// needTool returns the path of an outside tool: it skips the test on a
// developer machine without it and fails it in CI, where .ci/run installs
// it (Debian's libhivex-bin).
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed; .ci/run must install libhivex-bin", name)
		}
		t.Skipf("%s is not installed (apt-get install -y libhivex-bin); skipping", name)
	}
	return p
}

// hiveXML is the part of hivexml's output the test reads.
type hiveXML struct {
	Nodes []nodeXML `xml:"node"`
}

type nodeXML struct {
	Name   string     `xml:"name,attr"`
	Root   string     `xml:"root,attr"`
	Nodes  []nodeXML  `xml:"node"`
	Values []valueXML `xml:"value"`
}

type valueXML struct {
	Key   string `xml:"key,attr"`
	Value string `xml:"value,attr"`
}

func hivexml(t *testing.T, tool, file string) (*hiveXML, error) {
	t.Helper()
	out, err := exec.Command(tool, file).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("hivexml %s: %v: %s", file, err, out)
	}
	var h hiveXML
	if err := xml.Unmarshal(out, &h); err != nil {
		return nil, fmt.Errorf("hivexml %s: %v", file, err)
	}
	return &h, nil
}

// libhivex, an independent implementation of the format, opens each hive
// (checksum, bins, cells and the root key all checked on open), finds one
// empty root key, and can add a key and a value to it and write it back,
// which needs the free cell to be right.
func TestMinimalWithHivex(t *testing.T) {
	xmlTool := needTool(t, "hivexml")
	shTool := needTool(t, "hivexsh")
	dir := t.TempDir()
	for _, name := range names {
		b, err := Minimal(name, time.Unix(1700000000, 0))
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := hivexml(t, xmlTool, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Nodes) != 1 || h.Nodes[0].Name != name || h.Nodes[0].Root != "1" || len(h.Nodes[0].Nodes)+len(h.Nodes[0].Values) != 0 {
			t.Fatalf("%s: hivexml sees %+v, want one empty root key %s", name, h.Nodes, name)
		}

		edited := f + ".edited"
		script := fmt.Sprintf("add Pallet\ncd Pallet\nsetval 1\nBuilt\nstring:%s\ncommit %s\n", name, edited)
		cmd := exec.Command(shTool, "-w", f)
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("hivexsh -w %s: %v: %s", f, err, out)
		}
		if h, err = hivexml(t, xmlTool, edited); err != nil {
			t.Fatal(err)
		}
		if r := h.Nodes[0]; len(r.Nodes) != 1 || r.Nodes[0].Name != "Pallet" || len(r.Nodes[0].Values) != 1 || r.Nodes[0].Values[0].Value != name {
			t.Errorf("%s: after hivexsh added a key, hivexml sees %+v", name, r)
		}
	}
	// hivex refuses a damaged hive: its acceptance above means something.
	b, _ := Minimal("SYSTEM", time.Time{})
	b[offChecksum] ^= 1
	bad := filepath.Join(dir, "damaged")
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := hivexml(t, xmlTool, bad); err == nil {
		t.Error("hivexml accepted a hive with a wrong checksum")
	}
}
