//go:build !long

package auth_test

// The everyday run (without -tags long) forges 1,000 key IDs in
// TestUnknownKeyIDsRefetchAtMostOncePerMinute; -tags long, 10,000.
const forgedKeyIDs = 1_000
