package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/internal/pgtest"
)

// pushReplicaFigures runs three replicas on a PostgreSQL database of their
// own with push on, Drive's notifications sent to each replica in turn (as
// a load balancer in front of them would): the time from a notification
// until every replica serves its change, over the push world's libraries;
// then, in a My Drive library of the run's smallest size in the same
// index, the time from an admin POST /sync after 1,000 mixed changes
// (their notifications dropped, so that the request starts the sync) to
// its commit, and on to every replica serving it.
func (e *env) pushReplicaFigures(ctx context.Context, serverURL string, t *table) error {
	size := e.sc.sizes[0]
	pw, closeWorld, err := e.newPushWorld("push-replicas")
	if err != nil {
		return err
	}
	defer closeWorld()
	pw.size = size
	log.Printf("push on PostgreSQL replicas: a My Drive library of %s folders and the push world's libraries", thousands(float64(size)))
	if err := pw.world.buildMyDrive(ctx, size, e.sc.wideChildren, e.grants); err != nil {
		return err
	}
	if err := pw.buildLibraries(ctx); err != nil {
		return err
	}
	big := pushLib{library: pw.world.myDrive}
	all := append([]pushLib{big}, pw.libs...)
	if pw.config, err = pw.world.writeConfig(pw.dir, "push", libraries(all)); err != nil {
		return err
	}
	dbURL, drop, err := pgtest.CreateDatabase(ctx, serverURL, "foldermirror_bench_push_")
	if err != nil {
		return err
	}
	defer func() {
		if err := drop(); err != nil {
			log.Print(err)
		}
	}()
	pw.fake.SetResponseTime(driveLatency)
	token := pw.fake.GoogleIDToken(clientID, apiUsers[0], googlefake.WithTTL(2*time.Hour))
	var probes []string
	for _, l := range all {
		probes = append(probes, "/folder/v1/files/"+l.rootID())
	}
	reps, err := pw.startPushReplicas(ctx, "FOLDERMIRROR_INDEX_URL="+dbURL, token, probes)
	defer func() {
		for _, r := range reps {
			if r.proc != nil {
				r.proc.stop(15 * time.Second)
			}
		}
	}()
	if err != nil {
		return err
	}
	if err := waitCovered(ctx, pw.fake, all, time.Minute); err != nil {
		return fmt.Errorf("%w: %s", err, logTail(reps[0].proc))
	}
	var bases, names, hosts []string
	for _, r := range reps {
		bases, names, hosts = append(bases, "http://"+r.listen), append(names, r.name), append(hosts, r.listen)
	}
	pw.deliveries.spread(hosts)

	log.Printf("  %d changes, one at a time, each library in turn, served by all %d replicas", e.sc.push.pgChanges, len(reps))
	timings, err := pw.timeChanges(ctx, pw.libs, bases, token, e.sc.push.pgChanges)
	if err != nil {
		return err
	}
	latencyRows(t, sectionPushPG, timings, len(pw.libs), feeds(pw.libs), names)
	received := map[string]int{}
	for _, c := range timings {
		received[c.target]++
	}
	var each []string
	for _, r := range reps {
		each = append(each, fmt.Sprintf("%s %d", r.name, received[r.listen]))
	}
	t.note("%s: the notifications timed were posted to the replicas in turn: %s.", sectionPushPG, strings.Join(each, ", "))
	return pw.bigChanges(ctx, reps, bases, token, t)
}

// startPushReplicas starts three `foldermirror serve` on the database env
// names, with push on, Drive posting to the first replica's API listener:
// the first alone (it runs the first syncs), then the others; each is
// ready once it answers each of probes (API paths) to token. (A replica's
// /status shows only the directory syncs it ran.)
func (pw *pushWorld) startPushReplicas(ctx context.Context, env, token string, probes []string) ([]replica, error) {
	reps := make([]replica, replicas)
	for i := range reps {
		reps[i].name = fmt.Sprintf("push-replica-%d", i+1)
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
		answers := func() bool {
			for _, p := range probes {
				if _, err := fetch(ctx, "http://"+r.listen+p, token); err != nil {
					return false
				}
			}
			return true
		}
		var err error
		reps[i].proc, _, err = pw.startServe(ctx, r.name, r.admin, answers,
			append([]string{env, "FOLDERMIRROR_LISTEN=" + r.listen, "FOLDERMIRROR_ADMIN_LISTEN=" + r.admin}, pushEnv(address, latencyTTL)...)...)
		if err != nil {
			return reps, err
		}
	}
	return reps, nil
}

// bigChanges makes sc.changes mixed changes to the My Drive library of the
// run's smallest size, their notifications dropped, then asks the first
// replica for an incremental sync (admin POST /sync) and times it to its
// commit, and from there until every replica serves a folder the changes
// renamed.
func (pw *pushWorld) bigChanges(ctx context.Context, reps []replica, bases []string, token string, t *table) error {
	pw.fake.DropNotifications(true)
	probe, name := pw.world.mixedChanges(pw.sc.changes, pw.size+3)
	pw.fake.FlushNotifications()
	pw.fake.DropNotifications(false)
	log.Printf("  %s mixed changes to %s (notifications dropped); incremental sync through %s", thousands(float64(pw.sc.changes)),
		pw.world.myDrive.ID, reps[0].name)
	after := make([]time.Duration, len(bases))
	errs := make([]error, len(bases))
	var wg sync.WaitGroup
	pollCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	onCommit := func() {
		commit := time.Now()
		for i, b := range bases {
			wg.Go(func() {
				after[i], _, errs[i] = pollUntilServed(pollCtx, b+"/folder/v1/files/"+probe, token, name, commit)
			})
		}
	}
	r, err := pw.adminSync(ctx, reps[0].admin, onCommit)
	pw.fake.SetResponseTime(driveLatency) // adminSync sets it back to none
	if err != nil {
		return err
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("the renamed folder %s: %w", probe, err)
	}
	fig := fmt.Sprintf("%s mixed changes at %s folders", thousands(float64(pw.sc.changes)), thousands(float64(pw.size)))
	t.add(row{section: sectionPushPG, figure: fig + ": committed after the request (admin POST /sync)", value: r.committed.Seconds(),
		unit: unitSeconds, cmp: atMost, limit: incrementalSlack.Seconds() + float64(r.calls)*driveLatency.Seconds(),
		how: fmt.Sprintf("1 s + %d × 30 ms", r.calls)})
	t.add(row{section: sectionPushPG, figure: fmt.Sprintf("%s: served by all %d replicas after the commit", fig, len(reps)),
		value: ms(slices.Max(after)), unit: unitMillis, cmp: info})
	var each []string
	for i, d := range after {
		each = append(each, fmt.Sprintf("%s %s", reps[i].name, d.Round(time.Millisecond)))
	}
	t.note("%s, %s: the daemon read %d changes and applied %d in %s (its own measure); Drive calls %v; POST /sync to its \"done\" line (the commit) %s, to its result %s; "+
		"served after the commit by %s (polled every %s).", sectionPushPG, fig, r.Changes, r.Applied, r.Duration.Round(time.Millisecond), r.methods,
		r.committed.Round(time.Millisecond), r.wall.Round(time.Millisecond), strings.Join(each, ", "), servedPollEvery)
	return nil
}
