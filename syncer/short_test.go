//go:build !long

package syncer_test

// The everyday run (without -tags long) runs one seed of each mode of the
// model-based test by default.
const defaultModelSeeds = 1
