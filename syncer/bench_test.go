package syncer_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// buildTree creates n folders under a new root: ten children a folder,
// breadth first, each tenth one shared with a user of its own.
func buildTree(fake *googlefake.Server, n int) string {
	root := fake.CreateFolder(storage, "", "Bench")
	fake.Share(root, googlefake.Permission{Type: "domain", Role: "reader", Domain: "example.com", AllowFileDiscovery: true})
	queue := []string{root}
	for made := 0; made < n; {
		parent := queue[0]
		queue = queue[1:]
		for i := 0; i < 10 && made < n; i++ {
			id := fake.CreateFolder(storage, parent, fmt.Sprintf("folder %d", made))
			if made%10 == 0 {
				fake.Share(id, googlefake.Permission{Type: "user", Role: "writer", EmailAddress: fmt.Sprintf("user%d@example.com", made)})
			}
			queue = append(queue, id)
			made++
		}
	}
	return root
}

// BenchmarkFullSync10k syncs a My Drive library of 10,000 folders (plus its
// root) and reports folders and permissions indexed per second, and the
// Drive calls made against the fewest possible: ceil(folders/1000) pages of
// folders and one changes token.
func BenchmarkFullSync10k(b *testing.B) {
	const folders = 10000
	fake := startFake(b)
	root := buildTree(fake, folders)
	e := newEnv(b, fake, "id: bench, rootFolderId: "+root)
	var res *fm.SyncResult
	b.ResetTimer()
	for b.Loop() {
		var err error
		if res, err = e.s.Sync(context.Background(), fm.SyncRequest{Library: "bench", Mode: fm.SyncFull}, nil); err != nil {
			b.Fatal(err)
		}
	}
	perSync := b.Elapsed().Seconds() / float64(b.N)
	fewest := math.Ceil(float64(res.Folders)/1000) + 1
	b.ReportMetric(float64(res.Folders)/perSync, "folders/s")
	b.ReportMetric(float64(res.Permissions)/perSync, "permissions/s")
	b.ReportMetric(float64(res.Calls), "calls")
	b.ReportMetric(float64(res.Calls)/fewest, "calls/fewest")
}
