//go:build !long

package catalog

// The everyday run (without -tags long) runs one random world of
// TestCatalogFollowsTheIndex in each mode; -tags long, four.
const catalogSeeds = 1
