//go:build !long

package drivelist

// insertsAtEachByte: in the everyday run, TestDecodeTakesNoBrokenPage puts
// three of its bytes before each byte of a page, each of them before one
// byte in five.
const insertsAtEachByte = 3
