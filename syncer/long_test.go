//go:build long

package syncer_test

// Built with -tags long, the model-based test runs three seeds of each mode
// by default, and each mode on PostgreSQL.
const (
	defaultModelSeeds  = 3
	modelPostgresModes = 2
)
