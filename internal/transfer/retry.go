package transfer

import (
	"context"
	"fmt"
	"time"
)

// Retry calls try until it succeeds, fails with an error again says not
// to try again, or has been tried retries times more, waiting wait
// before the first retry and twice as long before each next, on ctx: an
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
		if before != nil {
			before(err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		wait *= 2
	}
}
