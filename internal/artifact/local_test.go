package artifact

import (
	"context"
	"strings"
	"testing"
)

// A local path that is a device has no end to hash or place: it is
// refused at once, named, rather than read for ever.
func TestLocalRefusesDevices(t *testing.T) {
	for _, path := range []string{"/dev/zero", "/dev/null"} {
		l := &Local{Path: path, Extract: &Extract{}} // as an archive: hashed for its key
		if key, ok, err := l.Key(New(), &Request{}); err != nil || ok || key != nil {
			t.Errorf("%s: Key = %v %v %v, want no key", path, key, ok, err)
		}
		_, err := l.Produce(context.Background(), New(), &Request{}, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), path+" is a character device: only files, directories and symlinks can be placed") {
			t.Errorf("%s: got %v", path, err)
		}
	}
}
