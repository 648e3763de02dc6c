package regauth_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// blobFile writes size bytes that are not all alike to a file and opens it.
func blobFile(t *testing.T, size int) (*os.File, []byte) {
	t.Helper()
	data := bytes.Repeat([]byte("pallet sends this blob with sendfile\n"), size/37+1)[:size]
	p := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// seesFile records whether the body reaching the base transport is one the
// kernel can send (net's sendfile wants a syscall.Conn).
type seesFile struct {
	base http.RoundTripper
	saw  chan bool
}

func (s seesFile) RoundTrip(req *http.Request) (*http.Response, error) {
	_, ok := req.Body.(syscall.Conn)
	s.saw <- ok
	return s.base.RoundTrip(req)
}

// A file body outlasts Stall while the registry keeps reading it, however
// slowly: the watchdog sees it move although no Read reports it.
func TestTransportSendsFileSteadily(t *testing.T) {
	t.Parallel()
	const size = 16 << 20
	// A window of its own, wider than the package's: the registry's
	// pauses must stay well inside it on a machine whose load delays a
	// 50 ms sleep past 200 ms (seen at a load of 9 on 2 cores).
	const stall = time.Second
	f, data := blobFile(t, size)
	want := sha256.Sum256(data)
	got := make(chan [32]byte, 1)
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		for {
			_, err := io.CopyN(h, r.Body, 1<<20)
			if err != nil {
				break
			}
			time.Sleep(stall / 4)
		}
		got <- [32]byte(h.Sum(nil))
	})
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	saw := make(chan bool, 1)
	c := &http.Client{Transport: regauth.Transport(seesFile{base, saw}, regauth.Timeouts{Limits: transfer.Limits{Stall: stall}})}
	req, err := http.NewRequest(http.MethodPatch, srv.URL+"/v2/x/blobs/uploads/1", f)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("an upload that kept moving failed: %v", err)
	}
	resp.Body.Close()
	if !<-saw {
		t.Error("the file reached the transport hidden in a wrapper: it is copied through the process, not sent by the kernel")
	}
	if elapsed := time.Since(start); elapsed < 2*stall {
		t.Fatalf("the upload took only %s, which proves nothing about outlasting Stall", elapsed)
	}
	if <-got != want {
		t.Error("the registry got other bytes than the file's")
	}
}

// A file body the registry stops reading fails as a stall of the upload.
func TestTransportFileStall(t *testing.T) {
	t.Parallel()
	const size = 16 << 20
	f, _ := blobFile(t, size)
	srv := server(t, func(w http.ResponseWriter, r *http.Request) { hang(t, r) })
	req, err := http.NewRequest(http.MethodPatch, srv.URL+"/v2/x/blobs/uploads/1", f)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	start := time.Now()
	resp, err := client(t, regauth.Timeouts{Limits: transfer.Limits{Stall: stall}}).Do(req)
	if err == nil {
		resp.Body.Close()
	}
	elapsed := time.Since(start)
	var se *regauth.StallError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *StallError", err, err)
	}
	// The offset is looked at when the timer fires: up to two Stalls.
	if elapsed < stall || elapsed > 5*time.Second {
		t.Errorf("failed after %s; the stall timeout is %s", elapsed, stall)
	}
	if se.While != "connecting or sending the request" {
		t.Errorf("stalled while %q", se.While)
	}
	// What the socket buffers took, and no more.
	if se.Sent <= 0 || se.Sent >= size {
		t.Errorf("Sent = %d, want some of the %d bytes", se.Sent, size)
	}
}

// Over TLS a file is read through the process anyway (to be encrypted), so
// it stays behind the wrapper that counts every byte it reads.
func TestTransportFileOverTLSIsRead(t *testing.T) {
	t.Parallel()
	const size = 1 << 20
	f, data := blobFile(t, size)
	want := sha256.Sum256(data)
	got := make(chan [32]byte, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		io.Copy(h, r.Body)
		got <- [32]byte(h.Sum(nil))
	}))
	t.Cleanup(srv.Close)
	saw := make(chan bool, 1)
	// The stall bound is not what this test is about: a wide one, so that
	// a TLS handshake delayed by the machine's load (it failed once at a
	// load of 7 under -race) does not end the upload.
	c := &http.Client{Transport: regauth.Transport(seesFile{srv.Client().Transport, saw}, regauth.Timeouts{Limits: transfer.Limits{Stall: time.Minute}})}
	req, err := http.NewRequest(http.MethodPatch, srv.URL+"/v2/x/blobs/uploads/1", f)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if <-saw {
		t.Error("over TLS the file reached the transport bare")
	}
	if <-got != want {
		t.Error("the registry got other bytes than the file's")
	}
}
