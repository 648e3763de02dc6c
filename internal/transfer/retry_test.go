package transfer

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"
	"time"
)

// A server's Retry-After is read as seconds or as an HTTP date, bounded
// by MaxRetryAfter; what is neither asks for nothing.
func TestAskedToWait(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	base := errors.New("download x: 429 Too Many Requests")
	for _, tc := range []struct {
		header string
		want   time.Duration // 0: no wait asked
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{" 7 ", 7 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"86400", MaxRetryAfter},
		{"99999999999999999999", 0}, // no number Go reads: not a wait
		{now.Add(20 * time.Second).Format(http.TimeFormat), 20 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{now.Add(2 * time.Hour).Format(http.TimeFormat), 2 * time.Hour}, // bounded where waited
		{"soon", 0},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set("Retry-After", tc.header)
		}
		err := AskedToWait(base, h, now)
		if !errors.Is(err, base) || err.Error() != base.Error() {
			t.Errorf("%q: the error became %v", tc.header, err)
		}
		var ra RetryAfter
		got := time.Duration(0)
		if errors.As(err, &ra) {
			got = ra.RetryAfter()
		}
		if got != tc.want {
			t.Errorf("Retry-After %q: wait %s, want %s", tc.header, got, tc.want)
		}
	}
}

// Retry waits what a RetryAfter error asks where that is longer than its
// own backoff, never past MaxRetryAfter, and its own backoff otherwise.
func TestRetryHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		asked, want time.Duration
	}{
		{30 * time.Millisecond, 30 * time.Millisecond},
		{time.Microsecond, time.Millisecond}, // the backoff is longer
		{time.Hour, MaxRetryAfter},
	} {
		var waits []time.Duration
		tries := 0
		ctx, cancel := context.WithCancel(context.Background())
		err := Retry(ctx, 1, time.Millisecond, func() error {
			tries++
			return askedToWait{errors.New("busy"), tc.asked}
		}, func(error) bool { return true }, func(_ error, wait time.Duration) {
			waits = append(waits, wait)
			if wait > time.Second {
				cancel() // told the wait; not waited for
			}
		})
		cancel()
		if len(waits) != 1 || waits[0] != tc.want {
			t.Errorf("asked %s: waits %v, want [%s] (err %v, %d tries)", tc.asked, waits, tc.want, err, tries)
		}
	}
}

// RetryAfterOf reads the wait asked however long, for a caller that
// refuses waits past its own bound rather than shortening them.
func TestRetryAfterOf(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"", 0, false},
		{"0", 0, false},
		{"5", 5 * time.Second, true},
		{"86400", 24 * time.Hour, true},
		{"9223372036854775807", time.Duration(math.MaxInt64/time.Second) * time.Second, true},
		{now.Add(3 * time.Hour).Format(http.TimeFormat), 3 * time.Hour, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, false},
		{"later", 0, false},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set("Retry-After", tc.header)
		}
		got, ok := RetryAfterOf(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Retry-After %q: %s %v, want %s %v", tc.header, got, ok, tc.want, tc.ok)
		}
	}
	// A server whose clock is an hour ahead of this machine's asks for
	// 5 s by its own Date; one an hour behind, too.
	for _, skew := range []time.Duration{time.Hour, -time.Hour} {
		h := http.Header{}
		h.Set("Date", now.Add(skew).Format(http.TimeFormat))
		h.Set("Retry-After", now.Add(skew+5*time.Second).Format(http.TimeFormat))
		if got, ok := RetryAfterOf(h, now); got != 5*time.Second || !ok {
			t.Errorf("a server %s off: %s %v, want 5s true", skew, got, ok)
		}
	}
}
