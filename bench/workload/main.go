// Command workload is the benchmark's helper (see bench/run.sh): it
// generates the benchmark workloads deterministically, serves their
// release archives and an OCI registry on loopback, and changes one file
// for the incremental rebuild.
//
//	workload gen windows DIR   Antrea-sized Windows workload (~250 MB) and its pallet.yaml
//	workload gen memory DIR [PART]  64 × 16 MiB (or PART bytes) of incompressible data (a 1 GiB
//	                           image) and pallet-N.yaml for it in N = 1, 4, 16 and 64 layers
//	workload gen files DIR N   N small files in directories of 100, a pallet.yaml placing them in one
//	                           layer and the same as a Dockerfile
//	workload gen go DIR BASE   a small Go program, its pallet.yaml and .ko.yaml, both on the image BASE
//	workload gen linux-base DIR  a pallet.yaml of a minimal Linux image (the base of the Go image)
//	workload limit [-jobs J] [-compression gzip|zstd] LAYOUT
//	                           the physical limit: the compressor alone, and one sha256 pass,
//	                           over the uncompressed layers of the OCI layout LAYOUT
//	workload serve -files DIR -addrs FILE [-storage DIR] [-registry-addr 127.0.0.1:PORT] [-log FILE]
//	                           registry (distribution/v3; on disk in DIR, else in memory) and a file server on
//	                           127.0.0.1, their addresses written to FILE; runs until killed; -log writes a
//	                           line per registry request to FILE
//	workload modify FILE SEED  rewrite 64 KiB in the middle of FILE (size and PE header kept)
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem" // the storage drivers the config may name
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	"github.com/sirupsen/logrus"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// mtime is given to every generated input: sources on a real machine are
// older than the 2 s pallet waits before trusting a file's stat data.
var mtime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	cniPath = "/containernetworking/plugins/releases/download/v1.4.0/cni-plugins-windows-amd64-v1.4.0.tgz"
	ovsPath = "/antrea-io/antrea/releases/download/v2.2.0/ovs-3.0.5-antrea.1-win64.zip"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("workload: ")
	if len(os.Args) < 2 {
		log.Fatal("usage: workload gen windows|memory|linux-base DIR | gen files DIR N | gen go DIR BASE | limit [-jobs J] [-compression C] LAYOUT | serve -files DIR -addrs FILE | modify FILE SEED")
	}
	var err error
	switch os.Args[1] {
	case "gen":
		if len(os.Args) < 4 {
			log.Fatal("usage: workload gen windows|memory|linux-base DIR | gen files DIR N | gen go DIR BASE")
		}
		switch os.Args[2] {
		case "windows":
			err = genWindows(os.Args[3])
		case "memory":
			part := "16777216"
			if len(os.Args) > 4 {
				part = os.Args[4]
			}
			err = genMemory(os.Args[3], part)
		case "files":
			if len(os.Args) != 5 {
				log.Fatal("usage: workload gen files DIR N")
			}
			err = genFiles(os.Args[3], os.Args[4])
		case "go":
			if len(os.Args) != 5 {
				log.Fatal("usage: workload gen go DIR BASE")
			}
			err = genGo(os.Args[3], os.Args[4])
		case "linux-base":
			err = genLinuxBase(os.Args[3])
		default:
			log.Fatalf("unknown workload %q", os.Args[2])
		}
	case "limit":
		err = limit(os.Args[2:])
	case "serve":
		err = serve(os.Args[2:])
	case "modify":
		if len(os.Args) != 4 {
			log.Fatal("usage: workload modify FILE SEED")
		}
		err = modify(os.Args[2], os.Args[3])
	default:
		log.Fatalf("unknown command %q", os.Args[1])
	}
	if err != nil {
		log.Fatal(err)
	}
}

// common are the bytes machine code and its data are full of; literals
// drawn half from them give a compressor's match finder as much work as a
// real program does (measured: gzip -6 takes about as long per MB on this
// as on Go binaries, and shrinks it about as much).
var common = []byte{0, 0, 0, 0, 0xff, 0x48, 0x89, 0x8b, 0x24, 0x44, 0x0f, 0xe8, 0x01, 0x10, 0x20, 0x08}

// fill returns n bytes shaped like a program's: runs of 4-20 bytes, each
// either fresh literals (with probability literal) or a copy of earlier
// bytes within deflate's 32 KiB window. literal 0.45 compresses to about
// 53% with gzip -6, 0.35 to about 46%.
func fill(rng *rand.Rand, n int, literal float64) []byte {
	b := make([]byte, n)
	i := 0
	for i < n {
		run := min(4+rng.IntN(17), n-i)
		if i < 1024 || rng.Float64() < literal {
			for j := 0; j < run; j++ {
				v := rng.Uint32()
				if v&0xff < 128 {
					b[i+j] = common[(v>>8)%uint32(len(common))]
				} else {
					b[i+j] = byte(v >> 16)
				}
			}
		} else {
			from := i - run - rng.IntN(min(i, 32<<10)-run+1)
			copy(b[i:i+run], b[from:from+run])
		}
		i += run
	}
	return b
}

// random returns n incompressible bytes.
func random(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// pe is a PE32+ amd64 file of about size bytes.
func pe(rng *rand.Rand, size int, literal float64) []byte {
	return fixture.PE(fixture.PEAMD64, string(fill(rng, size, literal)))
}

func write(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		return err
	}
	return os.Chtimes(path, mtime, mtime)
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// genWindows writes the Antrea-like Windows workload under dir:
//
//	agent/antrea-agent.exe   80 MB PE binary (local file)          -> /k/antrea/bin/
//	dlls/                    400 PE "DLLs" of 200-500 KB, 20 dirs -> /k/antrea/lib/
//	releases/...tgz          CNI plugins: 8 × 2.5 MB .exe + LICENSE -> /k/antrea/cni/   (url, sha256 pinned)
//	releases/...zip          OVS: .exe, .dll, driver + LICENSE      -> /openvswitch/    (url, sha256 pinned)
//	pallet.yaml, Dockerfile, sums.txt, base/pallet.yaml
func genWindows(dir string) error {
	rng := rand.New(rand.NewChaCha8([32]byte{'p', 'a', 'l', 'l', 'e', 't', '-', 'b', 'e', 'n', 'c', 'h'}))
	total, files := 0, 0
	put := func(rel string, data []byte, mode os.FileMode) error {
		total += len(data)
		files++
		return write(filepath.Join(dir, rel), data, mode)
	}
	// The agent: one big statically linked program.
	if err := put("agent/antrea-agent.exe", pe(rng, 80<<20, 0.45), 0o755); err != nil {
		return err
	}
	// A tree of DLLs, as a Windows distribution of OVS and its
	// dependencies has.
	for i := 0; i < 400; i++ {
		rel := fmt.Sprintf("dlls/pkg%02d/lib%03d.dll", i%20, i)
		if err := put(rel, pe(rng, 200<<10+rng.IntN(300<<10), 0.35), 0o644); err != nil {
			return err
		}
	}
	// The CNI plugins release.
	cni := []fixture.File{{Name: "cni-plugins/", Dir: true, Mode: 0o755}}
	for _, p := range []string{"host-local", "win-bridge", "win-overlay", "flannel", "bandwidth", "portmap", "tuning", "vrf"} {
		c := pe(rng, 5<<19, 0.45)
		total += len(c)
		files++
		cni = append(cni, fixture.File{Name: "cni-plugins/" + p + ".exe", Content: string(c), Mode: 0o755})
	}
	cni = append(cni, fixture.File{Name: "cni-plugins/LICENSE", Content: "Apache License 2.0 (benchmark stand-in)\n"})
	// The OVS zip.
	ovs := []fixture.File{{Name: "openvswitch/", Dir: true}}
	add := func(name string, size int, literal float64) {
		c := pe(rng, size, literal)
		total += len(c)
		files++
		ovs = append(ovs, fixture.File{Name: "openvswitch/" + name, Content: string(c), Mode: 0o755})
	}
	for _, p := range []string{"ovs-vsctl", "ovs-ofctl", "ovs-appctl", "ovsdb-client", "ovsdb-tool"} {
		add("usr/bin/"+p+".exe", 1<<20, 0.35)
	}
	for _, p := range []string{"ovs-vswitchd", "ovsdb-server"} {
		add("usr/sbin/"+p+".exe", 3<<20, 0.35)
	}
	for _, d := range []string{"libcrypto-3-x64", "libssl-3-x64", "libunbound", "libpthread"} {
		add("usr/bin/"+d+".dll", 1<<20, 0.35)
	}
	add("driver/ovsext.sys", 512<<10, 0.35)
	ovs = append(ovs,
		fixture.File{Name: "openvswitch/driver/ovsext.inf", Content: "; Open vSwitch extension (benchmark stand-in)\n"},
		fixture.File{Name: "openvswitch/LICENSE", Content: "Apache License 2.0 (benchmark stand-in)\n"},
	)
	tgz, zip := fixture.TarGz(cni), fixture.Zip(ovs)
	if err := write(filepath.Join(dir, "releases", filepath.FromSlash(cniPath)), tgz, 0o644); err != nil {
		return err
	}
	if err := write(filepath.Join(dir, "releases", filepath.FromSlash(ovsPath)), zip, 0o644); err != nil {
		return err
	}
	recipe := fmt.Sprintf(`# Generated by bench/workload: an Antrea-sized Windows image.
version: 1

args:
  RELEASES: http://127.0.0.1:8765   # the bench passes the loopback file server

artifacts:
  agent:
    local:
      path: ./agent/antrea-agent.exe
    licenses: none
  dlls:
    local:
      path: ./dlls
    licenses: none
  cni-plugins:
    url:
      url: "{{RELEASES}}%s"
      sha256: %s
      extract:
        strip: 1
  ovs:
    url:
      url: "{{RELEASES}}%s"
      sha256: %s
      extract:
        strip: 1

images:
  bench-windows:
    repository: bench/antrea-agent-windows
    tags: [v1]
    base: windows-hostprocess-scratch
    platforms: [windows/amd64]
    files:
      - artifact: agent
        dest: /k/antrea/bin/
      - artifact: dlls
        dest: /k/antrea/lib/
      - artifact: cni-plugins
        dest: /k/antrea/cni/
      - artifact: ovs
        dest: /openvswitch/
    config:
      env:
        - 'PATH=C:\Windows\system32;C:\Windows;C:\k\antrea\bin;C:\openvswitch\usr\bin;C:\openvswitch\usr\sbin'
`, cniPath, sum(tgz), ovsPath, sum(zip))
	if err := os.WriteFile(filepath.Join(dir, "pallet.yaml"), []byte(recipe), 0o644); err != nil {
		return err
	}
	// What run.sh's crane and BuildKit paths verify after downloading.
	sums := fmt.Sprintf("%s  cni.tgz\n%s  ovs.zip\n", sum(tgz), sum(zip))
	if err := os.WriteFile(filepath.Join(dir, "sums.txt"), []byte(sums), 0o644); err != nil {
		return err
	}
	// The same image for BuildKit: run.sh stages one directory per layer
	// (layer1..layer4, as pallet lays them out, archives unpacked) and
	// this COPY-only Dockerfile puts them on the host-process base.
	dockerfile := "# escape=`\n" + `# Generated by bench/workload: the BuildKit equivalent of pallet.yaml.
# The context is run.sh's staging directory, one directory per layer.
# (The escape directive, as usual for Windows, keeps backslashes literal.)
ARG BASE=mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0
FROM ${BASE}
COPY layer1/ /
COPY layer2/ /
COPY layer3/ /
COPY layer4/ /
ENV PATH="C:\Windows\system32;C:\Windows;C:\k\antrea\bin;C:\openvswitch\usr\bin;C:\openvswitch\usr\sbin"
`
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return err
	}
	// A tiny image on pallet's host-process base: the Windows base crane
	// appends to (crane needs its base in a registry).
	if err := write(filepath.Join(dir, "base", "README.txt"), []byte("benchmark base\n"), 0o644); err != nil {
		return err
	}
	base := `# Generated by bench/workload: pallet's host-process base, for crane.
version: 1
artifacts:
  readme:
    local:
      path: ./README.txt
    licenses: none
images:
  bench-base:
    tags: [v1]
    base: windows-hostprocess-scratch
    platforms: [windows/amd64]
    files:
      - artifact: readme
        dest: /README.txt
`
	if err := os.WriteFile(filepath.Join(dir, "base", "pallet.yaml"), []byte(base), 0o644); err != nil {
		return err
	}
	fmt.Printf("%.1f MB in %d files placed in the image (the archives: %.1f MB compressed)\n", float64(total)/1e6, files, float64(len(tgz)+len(zip))/1e6)
	return nil
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	files := fs.String("files", ".", "directory served over HTTP")
	addrs := fs.String("addrs", "", "file to write REGISTRY=host:port and FILES=http://host:port to")
	storage := fs.String("storage", "", "registry storage directory (default: in memory, which is slow for big blobs)")
	regAddr := fs.String("registry-addr", "127.0.0.1:0", "address the registry listens on (port 0: any free one)")
	logTo := fs.String("log", "", "file to write a line per registry request to (method, path, status, request bytes, start and duration)")
	fs.Parse(args)

	logrus.SetOutput(io.Discard)
	cfg := &configuration.Configuration{}
	cfg.Storage = configuration.Storage{"inmemory": configuration.Parameters{}}
	if *storage != "" {
		cfg.Storage = configuration.Storage{"filesystem": configuration.Parameters{"rootdirectory": *storage}}
	}
	cfg.HTTP.Secret = "pallet-bench"
	cfg.Validation.Manifests.URLs.Allow = []string{"^https://"}
	var reg http.Handler = handlers.NewApp(context.Background(), cfg)
	if *logTo != "" {
		// O_APPEND: the file may be truncated between pushes to compare
		f, err := os.OpenFile(*logTo, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		reg = logRequests(reg, f)
	}

	regL, err := net.Listen("tcp", *regAddr)
	if err != nil {
		return err
	}
	fileL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- http.Serve(regL, reg) }()
	go func() { errc <- http.Serve(fileL, http.FileServer(http.Dir(*files))) }()
	out := fmt.Sprintf("REGISTRY=%s\nFILES=http://%s\n", regL.Addr(), fileL.Addr())
	if *addrs != "" {
		tmp := *addrs + ".tmp"
		if err := os.WriteFile(tmp, []byte(out), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, *addrs); err != nil {
			return err
		}
	} else {
		fmt.Print(out)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case err := <-errc:
		return err
	case <-sig:
		return nil
	}
}

// logRequests writes a line per request h serves to w, for comparing
// the requests two clients make for the same push: the connection (its
// remote port), method, path, status, request body bytes, and when the
// request started and how long it took, in ms since the first one.
func logRequests(h http.Handler, w io.Writer) http.Handler {
	var mu sync.Mutex
	var t0 time.Time
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: rw, status: http.StatusOK}
		body := &countingReader{r: r.Body}
		r.Body = body
		h.ServeHTTP(sw, r)
		end := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if t0.IsZero() {
			t0 = start
		}
		_, port, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprintf(w, "%8.1f %7.1f %5s %-6s %s %d %d\n", float64(start.Sub(t0).Microseconds())/1000, float64(end.Sub(start).Microseconds())/1000, port, r.Method, r.URL.Path, sw.status, body.n)
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

type countingReader struct {
	r io.ReadCloser
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }

// modify rewrites 64 KiB in the middle of path with bytes that depend on
// seed, keeping its size (and so its PE header).
func modify(path, seed string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	var key [32]byte
	copy(key[:], "modify-"+seed)
	n := min(int64(64<<10), info.Size()/2)
	if _, err := f.WriteAt(random(rand.New(rand.NewChaCha8(key)), int(n)), info.Size()/2-n/2); err != nil {
		return err
	}
	return f.Close()
}
