//go:build !pallet_profile

package main

// startProfiles does nothing without -tags pallet_profile (profile.go).
func startProfiles() (stop func()) { return func() {} }
