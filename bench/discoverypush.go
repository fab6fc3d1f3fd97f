package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// pollPeriod is schedule.incremental's period in the push figures of n
// drives: a round of n safety-net polls is spread over 0.8 of it, at most
// half of storage.requestsPerSecond a second (10,000 polls take 40 s at
// least), so the period is long enough for the spread, and a round under
// way most of the time, for the changes to meet.
func pollPeriod(n int) time.Duration {
	return max(20*time.Second, time.Duration(n)*6*time.Millisecond).Round(time.Second)
}

// coverTimeout bounds the wait for a channel on every feed of n drives:
// the push keeper registers them one after the other, two calls each.
func coverTimeout(n int) time.Duration { return 2*time.Minute + time.Duration(n)*150*time.Millisecond }

// pushFigures starts a daemon with push on, on the index the first sync
// made, the incremental schedule at pollPeriod, and measures: the time
// until every feed (each drive's, and the storage account's user log) is
// watched; the Drive calls at rest; changes in random drives while
// safety-net polls run; and a drive the account is added to.
func (dw *drivesWorld) pushFigures(ctx context.Context, configPath string, t *table) error {
	n := len(dw.drives)
	period := pollPeriod(n)
	address := "http://" + dw.world.listen + pushPath
	env := append(pushEnv(address, latencyTTL), "FOLDERMIRROR_SCHEDULE_INCREMENTAL=@every "+period.String())
	dw.fake.SetResponseTime(driveLatency)
	start := time.Now()
	d, _, err := dw.startReady(ctx, filepath.Join(dw.dir, "serve-push.log"), configPath, dw.world.adminListen, n, env...)
	if err != nil {
		return err
	}
	defer d.stop(15 * time.Second)
	libs := []pushLib{userFeed}
	for _, dr := range dw.drives {
		libs = append(libs, dr.lib())
	}
	log.Printf("push on: %s feeds, schedule.incremental \"@every %s\"; waiting for a channel on each", thousands(float64(len(libs))), period)
	if err := waitCovered(ctx, dw.fake, libs, coverTimeout(n)); err != nil {
		return fmt.Errorf("%w: %s", err, logTail(d))
	}
	covered := time.Since(start)
	fig := fmt.Sprintf("%s drives of %d folders, push on", thousands(float64(n)), discFolders)
	t.add(row{section: sectionDiscovery, figure: fig + ": every feed watched, after the daemon's start", value: covered.Seconds(),
		unit: unitSeconds, cmp: info})
	// The keeper's calls may take a quarter of storage.requestsPerSecond,
	// two a channel (the feed's start token, then changes.watch).
	byRate := time.Duration(float64(len(libs)) * 2 / (discRequestsPerSecond / 4) * float64(time.Second))
	t.note("%s: a channel on each of the %s feeds (each drive's change log and the storage account's user log) %s after the daemon's start "+
		"(ready and then registering); at a quarter of storage.requestsPerSecond, two calls a channel, they would take %s.",
		fig, thousands(float64(len(libs))), covered.Round(time.Second), byRate.Round(time.Second))
	s, stop := sampleCalls(dw.fake)
	defer stop()
	if err := dw.restFigures(ctx, s, period, fig, t); err != nil {
		return fmt.Errorf("at rest: %w", err)
	}
	base := "http://" + dw.world.listen
	token := dw.fake.GoogleIDToken(clientID, apiUsers[0], googlefake.WithTTL(2*time.Hour))
	if err := dw.changeFigures(ctx, s, base, token, period, fig, t); err != nil {
		return fmt.Errorf("changes while polls run: %w", err)
	}
	served, notified, err := dw.addDrive(ctx, dw.added[0], []string{base}, token)
	if err != nil {
		return fmt.Errorf("a drive added: %w", err)
	}
	t.add(row{section: sectionDiscovery, figure: fig + ": a drive the account is added to, from Drive's notification to the API serving its root's children",
		value: ms(served[0]), unit: unitMillis, cmp: atMost, limit: ms(discAddedLimit)})
	t.note("%s, a drive the account is added to (%d folders): the fake posted the account's user log's notification %s after the change; "+
		"operation 2 of the drive (its root's children) answered %s after that notification (polled every %s from the change on).",
		fig, discFolders, notified.Round(100*time.Microsecond), served[0].Round(time.Millisecond), servedPollEvery)
	return nil
}

// restFigures counts the Drive calls by method at rest over 1.75 periods of
// the incremental schedule, from the end of a discovery (the one of a
// tick) until before the tick after next, so that the window holds one
// discovery whole: beyond the channels' renewals (none due: push.channelTtl
// is an hour), only the safety-net polls (a changes.list each) and the
// discoveries (drives.list pages and the user log's start token) are
// expected.
func (dw *drivesWorld) restFigures(ctx context.Context, s *callSampler, period time.Duration, fig string, t *table) error {
	admin := dw.world.adminListen
	if err := nextDiscovery(ctx, admin, 2*period); err != nil {
		return err
	}
	before, err := readMetrics(ctx, admin)
	if err != nil {
		return err
	}
	window := period * 7 / 4
	log.Printf("  at rest for %s", window)
	from, callsBefore := time.Now(), dw.fake.Calls()
	discoveries := map[time.Time]bool{}
	for time.Since(from) < window {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		st, err := discoveryStatus(ctx, admin)
		if err != nil {
			return err
		}
		if st.LastDiscovery.After(from) {
			discoveries[st.LastDiscovery] = true
		}
	}
	to, callsAfter := time.Now(), dw.fake.Calls()
	after, err := readMetrics(ctx, admin)
	if err != nil {
		return err
	}
	calls, methods := callsBetween(callsBefore, callsAfter)
	pages := int(math.Ceil(float64(len(dw.drives)) / drivesPage))
	renewals := methods[callWatch] + methods[callStop] + min(methods[callStartToken], methods[callWatch])
	listing := min(methods[callDrivesList], len(discoveries)*pages) +
		min(methods[callStartToken]-min(methods[callStartToken], methods[callWatch]), len(discoveries))
	polls := methods[callChanges]
	other := calls - renewals - listing - polls
	syncs := total(syncsStarted(after, "incremental")) - total(syncsStarted(before, "incremental"))
	notified := 0
	for _, d := range dw.deliveries.since(from) {
		if d.state == "change" && d.at.Before(to) {
			notified++
		}
	}
	busiest, when := s.busiest(from, to)
	span := to.Sub(from)
	rest := fig + ", at rest"
	t.add(row{section: sectionDiscovery, figure: rest + ": Drive calls other than channel renewals, the safety-net polls and the schedule's discoveries",
		value: float64(other), unit: unitCalls, cmp: exactly, limit: 0})
	t.add(row{section: sectionDiscovery, figure: rest + ": the busiest second's Drive calls", value: float64(busiest), unit: unitCalls,
		cmp: atMost, limit: discRequestsPerSecond, how: "storage.requestsPerSecond"})
	t.add(row{section: sectionDiscovery, figure: rest + ": safety-net polls a second, mean", value: float64(polls) / span.Seconds(), unit: unitCalls, cmp: info})
	t.add(row{section: sectionDiscovery, figure: rest + ": changes.list calls a scheduled incremental sync", value: float64(polls) / max(syncs, 1),
		unit: unitRatio, cmp: info})
	t.note("%s: over %s (from the end of a discovery at a tick of schedule.incremental to before the tick after next) the fake answered %d Drive calls %v; "+
		"%d discoveries ended in it (%d drives.list pages each); the daemon's /metrics counted %.0f incremental syncs ended; "+
		"the fake posted %d change notifications; the busiest second (from %s into the window) had %d calls, the mean %.1f.",
		rest, span.Round(time.Second), calls, methods, len(discoveries), pages, syncs, notified, when.Sub(from).Round(100*time.Millisecond),
		busiest, float64(calls)/span.Seconds())
	return nil
}

// callDrivesList is the method discovery lists the drives with.
const callDrivesList = "drive.drives.list"

// nextDiscovery waits until the daemon's /status tells of a discovery
// that ended after the one it tells of now.
func nextDiscovery(ctx context.Context, admin string, timeout time.Duration) error {
	cur, err := discoveryStatus(ctx, admin)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		st, err := discoveryStatus(ctx, admin)
		if err != nil {
			return err
		}
		if st.LastDiscovery.After(cur.LastDiscovery) {
			return nil
		}
	}
	return fmt.Errorf("no discovery ended within %s", timeout)
}

// changeFigures renames a folder of a random drive, sc.discovery.changes
// times, one at a time, each once the fake's counts show safety-net polls
// under way, and times each from the fake's notification until the API
// serves it (timeChanges).
func (dw *drivesWorld) changeFigures(ctx context.Context, s *callSampler, base, token string, period time.Duration, fig string, t *table) error {
	rng := rand.New(rand.NewPCG(27, uint64(len(dw.drives))))
	n := dw.sc.discovery.changes
	log.Printf("  %d changes in random drives while safety-net polls run", n)
	var timings []changeTiming
	var made []time.Time
	for range n {
		d := dw.drives[rng.IntN(len(dw.drives))]
		if err := s.waitPolling(ctx, 2*period); err != nil {
			return err
		}
		made = append(made, time.Now())
		c, err := dw.timeChanges(ctx, []pushLib{d.lib()}, []string{base}, token, 1)
		if err != nil {
			return err
		}
		timings = append(timings, c[0])
	}
	select { // the samples of the second after the last notification
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Second + 2*sampleEvery):
	}
	served := make([]time.Duration, n)
	around := make([]int, n)
	early := 0
	for i, c := range timings {
		served[i] = c.slowest()
		if slices.Max(c.served) < 0 {
			early++
		}
		at := made[i].Add(c.notified)
		around[i] = s.count(callChanges, at.Add(-time.Second), at.Add(time.Second))
	}
	slices.Sort(served)
	slices.Sort(around)
	p95 := served[max((n*95+99)/100-1, 0)]
	changes := fmt.Sprintf("a change in a random drive while safety-net polls run (%d changes)", n)
	t.add(row{section: sectionDiscovery, figure: fig + ": " + changes + ", from Drive's notification to the API serving it, p95",
		value: ms(p95), unit: unitMillis, cmp: atMost, limit: ms(discChangeP95Limit)})
	t.add(row{section: sectionDiscovery, figure: fig + ": " + changes + ", slowest", value: ms(served[n-1]), unit: unitMillis, cmp: info})
	note := fmt.Sprintf("%s, %s: renames, one at a time, each made once the fake had answered %d changes.list calls or more in the second before, "+
		"and served (operation 5, polled every %s from the change on) before the next; from the notification to the change served: "+
		"median %s, p95 %s, slowest %s; changes.list calls within a second either side of each notification (polls of other drives, "+
		"and the change's own sync): least %d, median %d", fig, changes, pollsUnderWay, servedPollEvery, served[n/2].Round(time.Millisecond),
		p95.Round(time.Millisecond), served[n-1].Round(time.Millisecond), around[0], around[n/2])
	if early > 0 {
		note += fmt.Sprintf("; %d changes were served before their notification (a poll already under way read them), counted as 0", early)
	}
	t.note("%s.", note)
	return nil
}

// addDrive adds the storage account to d, a drive it was not a member of,
// and returns, for each API base, the time from the fake's notification of
// it (the first "change" message to a channel of the account's user log
// after the change) until the base served the drive's root's children
// (operation 2), and the time from the change to that notification.
func (dw *drivesWorld) addDrive(ctx context.Context, d discDrive, bases []string, token string) ([]time.Duration, time.Duration, error) {
	channels := feedChannels(dw.fake, userFeed)
	if len(channels) == 0 {
		return nil, 0, errors.New("no live channel watches the storage account's user log")
	}
	pollCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	at := time.Now()
	dw.fake.Share(d.id, googlefake.Permission{Type: "user", Role: "reader", EmailAddress: storageAccount})
	served := make([]time.Duration, len(bases))
	errs := make([]error, len(bases))
	var wg sync.WaitGroup
	for i, b := range bases {
		wg.Go(func() {
			served[i], errs[i] = pollUntilListed(pollCtx, rootChildrenURL(b, d.id), token, folderName(1, 0), at)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	dw.fake.FlushNotifications()
	n, ok := dw.deliveries.first(at, channels)
	if !ok {
		return nil, 0, errors.New("the fake posted no notification of the account's user log after the drive was added")
	}
	notified := n.at.Sub(at)
	for i := range served {
		served[i] -= notified
	}
	return served, notified, nil
}

// pollUntilListed GETs url every servedPollEvery until it answers 200
// with the JSON string name in its body, and returns the time since from.
func pollUntilListed(ctx context.Context, url, token, name string, from time.Time) (time.Duration, error) {
	want := []byte(fmt.Sprintf("%q", name))
	for {
		body, err := fetch(ctx, url, token)
		if err == nil && bytes.Contains(body, want) {
			return time.Since(from), nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%s did not list %q (%w): last %w", url, name, ctx.Err(), err)
		case <-time.After(servedPollEvery):
		}
	}
}
