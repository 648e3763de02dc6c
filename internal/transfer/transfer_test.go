package transfer_test

import (
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/transfer"
)

func TestLimitsWithDefaults(t *testing.T) {
	defaults := transfer.Limits{MaxBytes: transfer.DefaultMaxBytes, Stall: transfer.DefaultStall, MinRate: transfer.DefaultMinRate}
	for _, tc := range []struct {
		name    string
		in, out transfer.Limits
	}{
		{"zero", transfer.Limits{}, defaults},
		{"negative", transfer.Limits{MaxBytes: -1, Stall: -time.Second, MinRate: -1}, defaults},
		{"set", transfer.Limits{MaxBytes: 10, Stall: time.Second, MinRate: 1},
			transfer.Limits{MaxBytes: 10, Stall: time.Second, MinRate: 1}},
		{"some set", transfer.Limits{Stall: time.Second},
			transfer.Limits{MaxBytes: transfer.DefaultMaxBytes, Stall: time.Second, MinRate: transfer.DefaultMinRate}},
	} {
		if got := tc.in.WithDefaults(); got != tc.out {
			t.Errorf("%s: %+v.WithDefaults() = %+v, want %+v", tc.name, tc.in, got, tc.out)
		}
	}
}
