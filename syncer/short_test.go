//go:build !long

package syncer_test

// The everyday run (without -tags long) runs one seed of each mode of the
// model-based test by default: the mode with the item alone on PostgreSQL,
// the other on bbolt.
const (
	defaultModelSeeds  = 1
	modelPostgresModes = 1
	// modelSeed0OnBoth: seed 0 of a mode run on PostgreSQL runs there
	// alone (the same sequence on bbolt is for -tags long).
	modelSeed0OnBoth = false
)

// defaultPushModelSeeds: the push-driven model test runs two seeds every
// day, seed 0 (the item alone, no coalescing delay) on PostgreSQL and seed
// 1 (every item, a delay) on bbolt; each seed runs on both with -tags long.
const (
	defaultPushModelSeeds = 2
	pushModelBothBackends = false
)

// rangedSeeds: the test of the createdTime ranges under changes runs one
// seed on bbolt every day, and one against a server that ignores their
// bounds (and one on PostgreSQL).
const rangedSeeds = 1

// rangedShrink: every day, the tests of the createdTime ranges make their
// worlds, their pages and the folders left that cut a range four times
// smaller (1,250 folders listed in pages of 250 rather than 5,000 in pages
// of 1,000): as many pages, ranges and changes during the listing, a
// quarter of the folders to list and compare (scaledRanges).
const rangedShrink = 4

// defaultDiscoveryModelSeeds: the model-based test of discovery runs one
// seed of each of its variants every day.
const defaultDiscoveryModelSeeds = 1
