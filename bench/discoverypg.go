package main

import (
	"context"
	"fmt"
	"log"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/internal/pgtest"
)

// replicaFigures runs three replicas with push on, on a PostgreSQL
// database of their own, Drive's notifications sent to each in turn: they
// discover the drives and sync them all (the time, for the record), then
// the account is added to a drive, and the time from Drive's notification
// until all three serve the drive's root's children is measured.
func (dw *drivesWorld) replicaFigures(ctx context.Context, serverURL string, t *table) error {
	for _, ch := range dw.fake.PushChannels() { // the one daemon's, stopped
		dw.fake.ExpireChannel(ch.ID)
	}
	dbURL, drop, err := pgtest.CreateDatabase(ctx, serverURL, "foldermirror_bench_discovery_")
	if err != nil {
		return err
	}
	defer func() {
		if err := drop(); err != nil {
			log.Print(err)
		}
	}()
	cfg, err := dw.world.writeDiscoveryConfig(dw.dir, "replicas")
	if err != nil {
		return err
	}
	n := len(dw.drives)
	log.Printf("discovery on %d PostgreSQL replicas, push on: %s drives", replicas, thousands(float64(n)))
	dw.fake.ResetCalls()
	start := time.Now()
	reps, err := dw.startDiscoveringReplicas(ctx, cfg, "FOLDERMIRROR_INDEX_URL="+dbURL)
	defer func() {
		for _, r := range reps {
			r.proc.stop(15 * time.Second)
		}
	}()
	if err != nil {
		return err
	}
	var procs []*daemonProc
	var admins, bases, hosts []string
	for _, r := range reps {
		procs, admins = append(procs, r.proc), append(admins, r.admin)
		bases, hosts = append(bases, "http://"+r.listen), append(hosts, r.listen)
	}
	s, err := waitAllSynced(ctx, procs, dw.fake, admins, dw.driveIDs(), syncTimeout(n))
	if err != nil {
		return err
	}
	fig := fmt.Sprintf("%s drives of %d folders, %d replicas on PostgreSQL, push on", thousands(float64(n)), discFolders, replicas)
	calls, methods := driveCalls(dw.fake)
	t.add(row{section: sectionDiscovery, figure: fig + ": discovery and first full sync of all: wall time", value: s.end.Sub(start).Seconds(),
		unit: unitSeconds, cmp: info})
	t.note("%s: from the first replica's start (an empty database) to the end of the last drive's first full sync, by any replica, %s; "+
		"Drive calls by then %d %v (the push channels' included).", fig, s.end.Sub(start).Round(time.Millisecond), calls, methods)
	if err := waitCovered(ctx, dw.fake, []pushLib{userFeed}, time.Minute); err != nil {
		return err
	}
	dw.deliveries.spread(hosts)
	token := dw.fake.GoogleIDToken(clientID, apiUsers[0], googlefake.WithTTL(2*time.Hour))
	served, notified, err := dw.addDrive(ctx, dw.added[1], bases, token)
	if err != nil {
		return fmt.Errorf("a drive added: %w", err)
	}
	t.add(row{section: sectionDiscovery, figure: fig + ": a drive the account is added to, from Drive's notification to all replicas serving its root's children",
		value: ms(slices.Max(served)), unit: unitMillis, cmp: atMost, limit: ms(discReplicaLimit)})
	var each []string
	for i, r := range reps {
		each = append(each, fmt.Sprintf("%s %s", r.name, served[i].Round(time.Millisecond)))
	}
	t.note("%s, a drive the account is added to: the fake posted the account's user log's notification %s after the change, "+
		"to one replica (in turn); operation 2 of the drive answered after it on %s (polled every %s from the change on; "+
		"the push channels of the drives were still being registered).",
		fig, notified.Round(100*time.Microsecond), strings.Join(each, ", "), servedPollEvery)
	return nil
}

// startDiscoveringReplicas starts three `foldermirror serve` of configPath
// on the database env names, each on ports of its own, with push on, Drive
// posting to the first's API listener, and waits until each is ready.
func (dw *drivesWorld) startDiscoveringReplicas(ctx context.Context, configPath, env string) ([]replica, error) {
	reps := make([]replica, replicas)
	for i := range reps {
		reps[i].name = fmt.Sprintf("discovery-replica-%d", i+1)
		var err error
		if reps[i].listen, err = freeAddr(); err == nil {
			reps[i].admin, err = freeAddr()
		}
		if err != nil {
			return nil, err
		}
	}
	address := "http://" + reps[0].listen + pushPath
	for i, r := range reps {
		var err error
		reps[i].proc, _, err = dw.startReady(ctx, filepath.Join(dw.dir, r.name+".log"), configPath, r.admin, 0,
			append([]string{env, "FOLDERMIRROR_LISTEN=" + r.listen, "FOLDERMIRROR_ADMIN_LISTEN=" + r.admin}, pushEnv(address, latencyTTL)...)...)
		if err != nil {
			return reps[:i], err
		}
	}
	return reps, nil
}
