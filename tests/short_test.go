//go:build !long

package tests

// The everyday run (without -tags long) checks one random world of the
// property test by default.
const defaultPropertySeeds = 1
