//go:build long

package syncer_test

// Built with -tags long, the model-based test runs three seeds of each mode
// by default, and each mode on PostgreSQL.
const (
	defaultModelSeeds  = 3
	modelPostgresModes = 2
)

// defaultPushModelSeeds: built with -tags long, the push-driven model test
// runs six seeds on each backend.
const defaultPushModelSeeds = 6

// rangedSeeds: built with -tags long, the test of the createdTime ranges
// under changes runs four seeds on bbolt, four against a server that
// ignores their bounds, and one of those on PostgreSQL.
const rangedSeeds = 4
