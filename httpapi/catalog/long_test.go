//go:build long

package catalog

// Built with -tags long, TestCatalogFollowsTheIndex runs four random worlds
// in each mode.
const catalogSeeds = 4
