package indextest

import (
	"context"
	"fmt"
	"testing"

	fm "github.com/foldermirror/foldermirror"
)

// benchDrives is how many drives the benchmarks' discoveries find: the
// shared drives of a large domain (DESIGN §10).
const benchDrives = 10_000

// BenchDiscovery measures what discovering a large domain's shared drives
// costs the index idx: putting its drives the first time, again with one
// renamed, again unchanged, and reading them.
func BenchDiscovery(b *testing.B, idx fm.DiscoveryStore) {
	ctx := context.Background()
	drives := make([]fm.DiscoveredDrive, benchDrives)
	for i := range drives {
		drives[i] = fm.DiscoveredDrive{ID: fmt.Sprintf("0A%017d", i), Name: fmt.Sprintf("Team drive %d", i)}
	}
	put := func(b *testing.B, domain string, drives []fm.DiscoveredDrive) {
		d := fm.Discovery{Domain: domain, StorageAccount: "storage@" + domain, Drives: drives}
		if err := idx.PutDiscovery(ctx, d, fm.Fence{}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("put 10,000 drives, the first time", func(b *testing.B) {
		for n := 0; b.Loop(); n++ {
			put(b, fmt.Sprintf("first%d.example", n), drives)
		}
	})
	put(b, "example.com", drives)
	b.Run("put 10,000 drives, one renamed", func(b *testing.B) {
		renamed := append([]fm.DiscoveredDrive(nil), drives...)
		for n := 0; b.Loop(); n++ {
			renamed[n%len(renamed)].Name = fmt.Sprint("renamed ", n)
			put(b, "example.com", renamed)
		}
	})
	b.Run("put 10,000 drives, none changed", func(b *testing.B) {
		put(b, "example.com", drives)
		for b.Loop() {
			put(b, "example.com", drives)
		}
	})
	b.Run("read 10,000 drives", func(b *testing.B) {
		for b.Loop() {
			got, _, err := idx.DiscoveredDrives(ctx, "example.com")
			if err != nil || len(got) != len(drives) {
				b.Fatalf("read %d drives, %v; want %d", len(got), err, len(drives))
			}
		}
	})
}
