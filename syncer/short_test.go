//go:build !long

package syncer_test

// The everyday run (without -tags long) runs one seed of each mode of the
// model-based test by default, and the mode with the item alone on
// PostgreSQL.
const (
	defaultModelSeeds  = 1
	modelPostgresModes = 1
)

// defaultPushModelSeeds: the push-driven model test runs two seeds on each
// backend every day.
const defaultPushModelSeeds = 2

// rangedSeeds: the test of the createdTime ranges under changes runs one
// seed on bbolt every day, and one against a server that ignores their
// bounds (and one on PostgreSQL).
const rangedSeeds = 1
