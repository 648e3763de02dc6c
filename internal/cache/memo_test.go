package cache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Over its limit, the memo keeps what this build used and, of the rest,
// what was used most recently.
func TestMemoIsCapped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	var files []string
	for _, n := range []string{"f1", "f2", "f3", "f4", "f5", "f6"} {
		p := filepath.Join(dir, n)
		writeFile(t, p, []byte(n))
		files = append(files, p)
	}
	settle()
	c, _ := openCache(t, cacheDir)
	for _, p := range files[:5] {
		if _, err := c.FileSHA256(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// f1 and f2 were last used long ago.
	var memo map[string]statMemo
	data, err := os.ReadFile(filepath.Join(cacheDir, "digests.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &memo); err != nil {
		t.Fatal(err)
	}
	if len(memo) != 5 {
		t.Fatalf("the memo holds %d entries, want 5", len(memo))
	}
	for i, p := range files[:2] {
		m := memo[p]
		m.Seen = today() - 30 + int64(i)
		memo[p] = m
	}
	if data, err = json.Marshal(memo); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(cacheDir, "digests.json"), data)

	c, _ = openCache(t, cacheDir)
	c.MemoLimit = 4
	for _, p := range files[4:] {
		if _, err := c.FileSHA256(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	saved := readMemo(t, cacheDir)
	var kept []string
	for _, p := range files {
		if _, ok := saved[p]; ok {
			kept = append(kept, filepath.Base(p))
		}
	}
	if got := strings.Join(kept, " "); got != "f3 f4 f5 f6" || len(saved) != 4 {
		t.Errorf("the memo kept %q (%d entries), want f3 f4 f5 f6", got, len(saved))
	}
}

// A memo file too big to read is ignored, not read into memory, and
// rewritten within bounds.
func TestOversizedMemoIsIgnored(t *testing.T) {
	defer func(n int64) { maxMemoBytes = n }(maxMemoBytes)
	maxMemoBytes = 1 << 10
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	p := filepath.Join(dir, "input")
	writeFile(t, p, []byte("content"))
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	// A memo whose one real entry would be used if the file were read.
	ino, dev, ctime := sysStamp(info)
	m := map[string]statMemo{p: {Size: info.Size(), ModTime: info.ModTime().UnixNano(), CTime: ctime, Ino: ino, Dev: dev,
		Facts: map[string]string{"sha256": sha([]byte("bogus"))}}}
	for i := range 20 {
		m[filepath.Join(dir, "gone", strings.Repeat("x", 40)+string(rune('a'+i)))] = statMemo{Facts: map[string]string{"sha256": "0"}}
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) <= maxMemoBytes {
		t.Fatalf("the memo is only %d bytes", len(data))
	}
	writeFile(t, filepath.Join(cacheDir, "digests.json"), data)
	c, _ := openCache(t, cacheDir)
	if got, err := c.FileSHA256(p); err != nil || got != sha([]byte("content")) {
		t.Errorf("digest %s (%v): the oversized memo was used", got, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	info, err = os.Stat(filepath.Join(cacheDir, "digests.json"))
	if err != nil || info.Size() > maxMemoBytes {
		t.Errorf("the memo was not rewritten within bounds: %v %v", info.Size(), err)
	}
}

// VerifiedBlob serves a whole blob and drops a damaged one.
func TestVerifiedBlob(t *testing.T) {
	c, log := openCache(t, t.TempDir())
	defer c.Close()
	data := []byte("blob content")
	sum := sha(data)
	tmp, err := c.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tmp, "b"), data)
	if _, err := c.PutBlob(sum, filepath.Join(tmp, "b")); err != nil {
		t.Fatal(err)
	}
	if p, ok := c.VerifiedBlob(sum); !ok || p != c.Blob(sum) {
		t.Fatalf("the whole blob was not served: %s %v", p, ok)
	}
	if _, ok := c.VerifiedBlob(sha([]byte("absent"))); ok {
		t.Error("an absent blob was served")
	}
	if _, ok := c.VerifiedBlob("../../etc/passwd"); ok {
		t.Error("a name that is no digest was served")
	}
	rewriteInPlace(t, c.Blob(sum), 0, []byte("B"))
	if _, ok := c.VerifiedBlob(sum); ok {
		t.Error("the damaged blob was served")
	}
	if _, err := os.Stat(c.Blob(sum)); err == nil {
		t.Error("the damaged blob was not dropped")
	}
	if !strings.Contains(log.String(), "sha256:"+sum+" is damaged") {
		t.Errorf("the damage was not reported; log:\n%s", log)
	}
}
