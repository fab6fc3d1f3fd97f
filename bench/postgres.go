package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
	"github.com/foldermirror/foldermirror/internal/pgtest"
)

// Limits of the PostgreSQL figures.
const (
	pgSyncShare       = 2.0 // full sync wall time, PostgreSQL over bbolt
	pgThroughputShare = 0.9 // API throughput, a PostgreSQL replica over a bbolt daemon
	pgServedLimit     = 2 * time.Second
	replicas          = 3
)

// replica is one `foldermirror serve` of a shared index.
type replica struct {
	name, listen, admin string
	proc                *daemonProc
}

// postgresFigures measures the PostgreSQL index on the server at
// serverURL, in a database of its own, beside bbolt in the same world (a
// My Drive library of the run's smallest size): the full sync's wall time
// on each; the API's throughput of one of three replicas on the database
// against a daemon on a bbolt index; and the time from a sync's commit
// through one replica until all three serve it.
func (e *env) postgresFigures(ctx context.Context, serverURL string, t *table) error {
	size := e.sc.sizes[0]
	h, closeWorld, err := e.host(ctx, size, t)
	if err != nil {
		return err
	}
	defer closeWorld()
	dbURL, drop, err := pgtest.CreateDatabase(ctx, serverURL, "foldermirror_bench_")
	if err != nil {
		return err
	}
	defer func() {
		if err := drop(); err != nil {
			log.Print(err)
		}
	}()
	onPostgres := "FOLDERMIRROR_INDEX_URL=" + dbURL

	lib := h.world.myDrive.ID
	log.Printf("full sync of %s (%s folders) on bbolt, then on PostgreSQL", lib, thousands(float64(size)))
	onBolt, err := h.runSync(ctx, driveLatency, h.config, lib, true, "")
	if err != nil {
		return err
	}
	onPG, err := h.runSync(ctx, driveLatency, h.config, lib, true, fmt.Sprintf("sync-%s-postgres", sizeName(h.size)), onPostgres)
	if err != nil {
		return err
	}
	t.add(row{section: sectionPostgres, figure: "full sync: wall time on PostgreSQL", size: size, value: onPG.wall.Seconds(),
		unit: unitSeconds, cmp: atMost, limit: pgSyncShare * onBolt.wall.Seconds(), rule: "≤ 2 × bbolt's",
		how: fmt.Sprintf("2 × bbolt's %.2f s", onBolt.wall.Seconds())})
	t.add(row{section: sectionPostgres, figure: "full sync: peak RSS on PostgreSQL", size: size, value: float64(onPG.peakRSS),
		unit: unitMB, cmp: info})
	t.add(row{section: sectionPostgres, figure: "full sync: CPU a folder on PostgreSQL", size: size, value: cpuPerFolder(onPG), unit: unitMicros,
		cmp: atMost, limit: pgSyncCPULimit.Seconds() * 1e6, rule: "≤ 20 µs (the server's not counted)",
		how: fmt.Sprintf("%.2f s of CPU; bbolt's %.2f µs", onPG.cpu.Seconds(), cpuPerFolder(onBolt))})
	t.note("%s folders on PostgreSQL: full sync %s on bbolt (peak RSS %.0f MB), %s on PostgreSQL (peak RSS %.0f MB); %s.",
		thousands(float64(size)), onBolt.wall.Round(time.Millisecond), float64(onBolt.peakRSS)/1e6,
		onPG.wall.Round(time.Millisecond), float64(onPG.peakRSS)/1e6, describePhases(onPG))

	bolt, _, err := h.startServe(ctx, "serve-bbolt", h.world.adminListen, nil)
	if err != nil {
		return err
	}
	defer bolt.stop(15 * time.Second)
	tokens := make([]string, len(apiUsers))
	for i, u := range apiUsers {
		tokens[i] = h.fake.GoogleIDToken(clientID, u, googlefake.WithTTL(2*time.Hour))
	}
	reps, err := h.startReplicas(ctx, onPostgres, tokens)
	defer func() {
		for _, r := range reps {
			r.proc.stop(15 * time.Second)
		}
	}()
	if err != nil {
		return err
	}
	if err := h.replicaThroughput(ctx, "http://"+h.world.listen, "http://"+reps[0].listen, tokens, t); err != nil {
		return err
	}
	return h.replicasServed(ctx, reps, tokens[0], t)
}

// startReplicas starts three `foldermirror serve` of the same
// configuration on the database env names, each on ports of its own, and
// waits until each answers every API user. (A replica's /status shows the
// directory syncs it ran: one of them runs each, the others skip it and
// read the directory from the database.)
func (h *hosted) startReplicas(ctx context.Context, env string, tokens []string) ([]replica, error) {
	var reps []replica
	for i := range replicas {
		r := replica{name: fmt.Sprintf("replica-%d", i+1)}
		var err error
		if r.listen, err = freeAddr(); err == nil {
			r.admin, err = freeAddr()
		}
		if err == nil {
			answers := func() bool { return answersEveryone(ctx, "http://"+r.listen+"/folder/v1/files/"+h.world.wide, tokens) }
			r.proc, _, err = h.startServe(ctx, r.name, r.admin, answers, env,
				"FOLDERMIRROR_LISTEN="+r.listen, "FOLDERMIRROR_ADMIN_LISTEN="+r.admin)
		}
		if err != nil {
			return reps, err
		}
		reps = append(reps, r)
	}
	return reps, nil
}

// replicaThroughput loads operations 6 and 4 of the bbolt daemon at
// boltBase and of the PostgreSQL replica at pgBase, one after the other.
func (h *hosted) replicaThroughput(ctx context.Context, boltBase, pgBase string, tokens []string, t *table) error {
	for _, ep := range []struct{ id, path string }{
		{"op 6", "/folder/v1/files/" + h.world.wide + "/children?onlyDirectChildren=true"},
		{"op 4", "/folder/v1/folders/" + h.world.deep + "/permissions"},
	} {
		onBolt, err := load(ctx, boltBase+ep.path, tokens, h.sc)
		if err != nil {
			return fmt.Errorf("%s on bbolt: %w", ep.id, err)
		}
		onPG, err := load(ctx, pgBase+ep.path, tokens, h.sc)
		if err != nil {
			return fmt.Errorf("%s on a PostgreSQL replica: %w", ep.id, err)
		}
		log.Printf("  %s: bbolt %s; PostgreSQL replica %s", ep.id, onBolt, onPG)
		t.add(row{section: sectionPostgres, figure: ep.id + ": throughput of a replica", size: h.size, value: onPG.rps(),
			unit: unitRPS, cmp: atLeast, limit: pgThroughputShare * onBolt.rps(), rule: "≥ 0.9 × bbolt",
			how: "0.9 × bbolt " + thousands(onBolt.rps())})
		t.note("%s folders, %s, %d clients: a daemon on bbolt %s; a replica on PostgreSQL %s.",
			thousands(float64(h.size)), ep.id, h.sc.clients, onBolt, onPG)
	}
	return nil
}

// replicasServed makes mixed changes, syncs them through the first
// replica, and measures the time from its commit until every replica
// serves a folder the changes renamed.
func (h *hosted) replicasServed(ctx context.Context, reps []replica, token string, t *table) error {
	probe, name := h.world.mixedChanges(h.sc.changes, h.size+1)
	log.Printf("  %s mixed changes; incremental sync through %s", thousands(float64(h.sc.changes)), reps[0].name)
	after := make([]time.Duration, len(reps))
	errs := make([]error, len(reps))
	var wg sync.WaitGroup
	pollCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	onCommit := func() {
		commit := time.Now()
		for i, r := range reps {
			wg.Go(func() {
				after[i], _, errs[i] = pollUntilServed(pollCtx, "http://"+r.listen+"/folder/v1/files/"+probe, token, name, commit)
			})
		}
	}
	r, err := h.adminSync(ctx, reps[0].admin, onCommit)
	if err != nil {
		return err
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("the renamed folder %s: %w", probe, err)
	}
	slowest := 0
	var each []string
	for i, d := range after {
		if d > after[slowest] {
			slowest = i
		}
		each = append(each, fmt.Sprintf("%s %s", reps[i].name, d.Round(time.Millisecond)))
	}
	log.Printf("  committed after %s (%d changes applied, %d Drive calls %v, the daemon took %s); served by %s", r.committed.Round(time.Millisecond), r.Applied,
		r.calls, r.methods, r.Duration.Round(time.Millisecond), strings.Join(each, ", "))
	t.add(row{section: sectionPostgres, figure: fmt.Sprintf("commit through one replica to all %d serving it", len(reps)),
		size: h.size, value: ms(after[slowest]), unit: unitMillis, cmp: atMost, limit: ms(pgServedLimit), rule: "≤ 2 s"})
	t.note("%s folders, %s mixed changes synced through %s (committed %s after the request): served after the commit by %s (polled every %s).",
		thousands(float64(h.size)), thousands(float64(h.sc.changes)), reps[0].name, r.committed.Round(time.Millisecond),
		strings.Join(each, ", "), servedPollEvery)
	return nil
}

// answersEveryone tells whether url answers 200 to each token.
func answersEveryone(ctx context.Context, url string, tokens []string) bool {
	for _, tok := range tokens {
		if _, err := fetch(ctx, url, tok); err != nil {
			return false
		}
	}
	return true
}
