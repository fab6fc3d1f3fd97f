//go:build !long

package auth_test

// The everyday run (without -tags long) forges 250 key IDs in
// TestUnknownKeyIDsRefetchAtMostOncePerMinute; -tags long, 10,000.
const forgedKeyIDs = 250
