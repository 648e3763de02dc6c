package transfer

import (
	"context"
	"errors"
	"fmt"
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
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return err
	}
	var d time.Duration
	if n, perr := strconv.ParseInt(v, 10, 64); perr == nil {
		if n <= 0 {
			return err
		}
		d = time.Duration(min(n, int64(MaxRetryAfter/time.Second))) * time.Second
	} else if t, perr := http.ParseTime(v); perr == nil && t.After(now) {
		d = t.Sub(now)
	} else {
		return err
	}
	return askedToWait{err, d}
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
