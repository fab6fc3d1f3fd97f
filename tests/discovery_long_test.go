//go:build long

package tests

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/foldermirror/foldermirror/internal/fmtest"
)

// Replicas on one PostgreSQL database, each ticking its incremental
// schedule at its own times (from its start, a second apart): together,
// they list the shared drives as often as one process would, not once a
// replica at each of their ticks.
func TestDiscoveryReplicasTicks(t *testing.T) {
	fake := newDriveFake(t)
	createDrive(fake, "Research", 2).join(fake)
	c := discoveryConfig(t, fake, fmtest.Postgres)
	const period = 3 * time.Second
	c.Schedule.Incremental = "@every 3s"
	replicas := make([]*process, 3)
	for i := range replicas {
		// "@every" ticks on whole seconds from the second a schedule
		// starts: a replica started a second after another ticks a second
		// after it.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 100*time.Millisecond)))
		r := *c
		r.DataDir = filepath.Join(t.TempDir(), "data")
		r.Path = filepath.Join(t.TempDir(), "config.yaml")
		replicas[i] = startServe(t, fmtest.WriteConfig(t, &r))
	}
	for _, p := range replicas {
		waitReady(t, p.admin+"/readyz")
	}
	fake.ResetCalls()
	const window = 4 * period
	time.Sleep(window)
	lists := fake.CallCount("drive.drives.list")
	if most := int(window/period) + 2; lists > most || lists == 0 {
		t.Errorf("%d drives.list calls in %s of a %s schedule on 3 replicas; want 1 to %d", lists, window, period, most)
	}
	t.Logf("%d discoveries in %s", lists, window)
}
