//go:build long

package syncer_test

// Built with -tags long, the model-based test runs three seeds of each mode
// by default on bbolt, and seed 0 of each mode on PostgreSQL too.
const (
	defaultModelSeeds  = 3
	modelPostgresModes = 2
	// modelSeed0OnBoth: seed 0 of a mode run on PostgreSQL runs on bbolt
	// too.
	modelSeed0OnBoth = true
)

// defaultPushModelSeeds: built with -tags long, the push-driven model test
// runs six seeds, each on both backends (pushModelBothBackends).
const (
	defaultPushModelSeeds = 6
	pushModelBothBackends = true
)

// rangedSeeds: built with -tags long, the test of the createdTime ranges
// under changes runs four seeds on bbolt, four against a server that
// ignores their bounds, and one of those on PostgreSQL.
const rangedSeeds = 4

// rangedShrink: built with -tags long, the tests of the createdTime ranges
// list their worlds of thousands of folders in pages of Drive's 1,000.
const rangedShrink = 1

// defaultDiscoveryModelSeeds: built with -tags long, the model-based test
// of discovery runs three seeds of each of its variants.
const defaultDiscoveryModelSeeds = 3
