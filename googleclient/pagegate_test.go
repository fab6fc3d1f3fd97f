package googleclient_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/googleclient"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/wait"
	"github.com/prometheus/client_golang/prometheus"
	drive "google.golang.org/api/drive/v3"
)

// listedDrive is the Drive client of a storage account with n folders, a
// hundred a page.
func listedDrive(t *testing.T, n int) *drive.Service {
	t.Helper()
	fake := fmtest.StartGoogle(t)
	fake.AddUser(storage)
	for i := range n {
		fake.CreateFolder(storage, "", fmt.Sprint("f", i))
	}
	metrics := googleclient.NewMetrics(prometheus.NewRegistry())
	svc, err := clientsOf(t, fake, fmtest.WriteKey(t, fake, filepath.Join(t.TempDir(), "sa.json")), metrics).Drive(storage)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// listThrough lists every file, reading ahead, through gate; inPage runs
// for each page while the listing holds it.
func listThrough(ctx context.Context, svc *drive.Service, gate *googleclient.PageGate, inPage func()) (int, error) {
	ctx, stop := googleclient.WithReadAhead(ctx)
	defer stop()
	ctx, done := gate.Hold(ctx)
	defer done()
	files := 0
	err := svc.Files.List().PageSize(100).Fields("nextPageToken,files(id)").Pages(ctx, func(list *drive.FileList) error {
		files += len(list.Files)
		inPage()
		done()
		return nil
	})
	return files, err
}

// Listings side by side under a gate of one slot use their pages one at a
// time, and each gets all of its pages.
func TestPageGateOnePageAtATime(t *testing.T) {
	svc := listedDrive(t, 450)
	gate := googleclient.NewPageGate(1)
	var inUse, most atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			files, err := listThrough(context.Background(), svc, gate, func() {
				n := inUse.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(time.Millisecond) // a page in use a while, long enough for others to overlap
				inUse.Add(-1)
			})
			if err != nil || files != 450 {
				t.Errorf("listed %d files (%v); want 450", files, err)
			}
		})
	}
	wait.Group(t, &wg, "the listings' end")
	if most.Load() != 1 {
		t.Errorf("%d pages in use at once under a gate of one slot", most.Load())
	}
}

// A listing waiting for a slot stops when its context ends; the slot a
// listing holds is given back when it ends.
func TestPageGateWaitEndsWithContext(t *testing.T) {
	svc := listedDrive(t, 150)
	gate := googleclient.NewPageGate(1)
	holding, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	go func() {
		_, _ = listThrough(context.Background(), svc, gate, func() {
			once.Do(func() { close(holding) })
			<-release
		})
	}()
	wait.Receive(t, holding, "the first listing holding the slot")
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		_, err := listThrough(ctx, svc, gate, func() { t.Error("a page used while another listing held the only slot") })
		stopped <- err
	}()
	time.AfterFunc(50*time.Millisecond, cancel)
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the waiting listing, its context ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("a listing waiting for the slot did not stop with its context")
	}
	close(release)
	if files, err := listThrough(context.Background(), svc, gate, func() {}); err != nil || files != 150 {
		t.Errorf("after the other listing ended: %d files, %v", files, err)
	}
}
