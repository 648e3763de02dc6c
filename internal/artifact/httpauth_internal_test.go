package artifact

import (
	"reflect"
	"testing"
)

func TestParseNetrc(t *testing.T) {
	machines, fallback, err := parseNetrc(`# comment
machine Files.Example.com login alice password "pa ss\"word" account ignored
macdef init
cd /pub
ls

machine mirror.example.com:8443
	login bob
	password hunter2
default login anon password guest
machine after.example.com login never password never
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []netrcEntry{
		{machine: "files.example.com", login: "alice", password: `pa ss"word`},
		{machine: "mirror.example.com:8443", login: "bob", password: "hunter2"},
	}
	if !reflect.DeepEqual(machines, want) {
		t.Errorf("machines %+v, want %+v", machines, want)
	}
	if fallback == nil || fallback.login != "anon" || fallback.password != "guest" {
		t.Errorf("default %+v", fallback)
	}
	c := &httpCreds{machines: machines, fallback: fallback}
	for host, login := range map[string]string{
		"files.example.com":       "alice",
		"FILES.example.com:443":   "alice",
		"mirror.example.com:8443": "bob",
		"mirror.example.com":      "anon",
		"elsewhere.example.com":   "anon",
	} {
		if e := c.netrcFor(host); e == nil || e.login != login {
			t.Errorf("netrcFor(%s) = %+v, want %s", host, e, login)
		}
	}
	for _, bad := range []string{"login x", "machine", `machine a password "open`, "machine a frobnicate x"} {
		if _, _, err := parseNetrc(bad); err == nil {
			t.Errorf("parseNetrc(%q): no error", bad)
		}
	}
}

func TestParseHostHeader(t *testing.T) {
	h, err := parseHostHeader("  Files.Example.com:8443   x-api-key:  abc:def  ")
	if err != nil {
		t.Fatal(err)
	}
	if h != (hostHeader{host: "files.example.com:8443", name: "X-Api-Key", value: "abc:def"}) {
		t.Errorf("%+v", h)
	}
	for _, bad := range []string{"", "files.example.com", "files.example.com X Token: v", "files.example.com/x A: b", "files.example.com A: b\nc"} {
		if _, err := parseHostHeader(bad); err == nil {
			t.Errorf("parseHostHeader(%q): no error", bad)
		}
	}
}
