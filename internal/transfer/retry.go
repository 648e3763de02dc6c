package transfer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter bounds the wait a server's Retry-After asks for: one
// asking for an hour fails the build sooner, after the retries, rather
// than holding it.
const MaxRetryAfter = time.Minute

// RetryAfter is an error of an answer that said how long to wait before
// asking again (a 429 or 503 with Retry-After), which Retry honours.
type RetryAfter interface {
	error
	RetryAfter() time.Duration
}

// AskedToWait is err, the error of answer h, with the wait its
// Retry-After header asks for (seconds, or an HTTP date after now), or
// err alone when it asks none.
func AskedToWait(err error, h http.Header, now time.Time) error {
	d, ok := RetryAfterOf(h, now)
	if !ok {
		return err
	}
	if _, perr := strconv.ParseInt(strings.TrimSpace(h.Get("Retry-After")), 10, 64); perr == nil {
		// Seconds are bounded here, a date where it is waited (Retry).
		d = min(d, MaxRetryAfter)
	}
	return askedToWait{err, d}
}

// RetryAfterOf is the wait the Retry-After header of h asks for, in
// seconds or as an HTTP date after now (or after h's Date), however long; false when it asks
// none (absent, zero, past, or neither form).
func RetryAfterOf(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0, false
		}
		return time.Duration(min(n, int64(math.MaxInt64/time.Second))) * time.Second, true
	}
	// A date is the server's clock: measured from the Date it answered
	// with, where it gave one, a server a minute ahead of this machine
	// asking for 5 s is not taken to ask for 65.
	if t, err := http.ParseTime(v); err == nil {
		if sent, err := http.ParseTime(h.Get("Date")); err == nil {
			now = sent
		}
		if t.After(now) {
			return t.Sub(now), true
		}
	}
	return 0, false
}

type askedToWait struct {
	error
	d time.Duration
}

func (a askedToWait) Unwrap() error             { return a.error }
func (a askedToWait) RetryAfter() time.Duration { return a.d }

// Retry calls try until it succeeds, fails with an error again says not
// to try again, or has been tried retries times more, waiting wait
// before the first retry and twice as long before each next (longer if
// the error is a RetryAfter asking more, up to MaxRetryAfter), on ctx: an
// interrupt ends the wait at once with ctx's error. before, when not
// nil, is told of each retry and its wait. The last error of several
// attempts says how many there were: alone, it reads as a one-off
// failure rather than one that outlasted every retry.
func Retry(ctx context.Context, retries int, wait time.Duration, try func() error, again func(error) bool, before func(err error, wait time.Duration)) error {
	for attempt := 1; ; attempt++ {
		err := try()
		switch {
		case err == nil || !again(err) || ctx.Err() != nil:
			return err
		case attempt > retries:
			if attempt > 1 {
				return fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
			}
			return err
		}
		// A server that said when to come back (Retry-After) is asked
		// no sooner, up to MaxRetryAfter: sooner it answers the same.
		pause := wait
		var later RetryAfter
		if errors.As(err, &later) {
			pause = max(pause, min(later.RetryAfter(), MaxRetryAfter))
		}
		if before != nil {
			before(err, pause)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		wait *= 2
	}
}
