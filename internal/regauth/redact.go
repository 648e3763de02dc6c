package regauth

import "github.com/pallet-dev/pallet/internal/lazyre"

// signedQuery is a URL query parameter that carries a secret: an upload
// session's state (distribution's _state is signed), a token, a
// signature (pre-signed storage URLs).
var signedQuery = lazyre.New(`([?&](?:_state|[A-Za-z0-9_.-]*(?:[Tt]oken|[Ss]ignature|[Cc]redential|[Ss]ig))=)[^&\s"']+`)

// Redact hides secrets carried in URLs in err's message: a connection
// reset in the middle of an upload is reported by net/http with the
// upload URL whole, and CI logs keep it. Every registry write and read
// returns its error through it: pushes, and the shared cache's exports
// and imports.
func Redact(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := signedQuery().ReplaceAllString(msg, "${1}REDACTED")
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

// redactedError is err said without the secrets of its message.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

func (e *redactedError) Unwrap() error { return e.err }
