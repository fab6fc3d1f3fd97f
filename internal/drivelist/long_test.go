//go:build long

package drivelist

// insertsAtEachByte: built with -tags long, TestDecodeTakesNoBrokenPage
// puts each of its bytes before every byte of a page.
const insertsAtEachByte = len(brokenPageInserts)
