//go:build !long

package tests

// The everyday run (without -tags long) checks one random world of the
// property test by default, on PostgreSQL as one user of each kind.
const (
	defaultPropertySeeds        = 1
	propertyEveryUserOnPostgres = false
)
