package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"maps"
	"slices"
	"time"
)

// restFolders is the size of each shared drive at rest, the drive included.
const restFolders = 5

// The Drive methods a channel's renewal calls: the feed's start token and
// the new channel's watch, then the old channel's stop.
const (
	callStartToken = "drive.changes.getStartPageToken"
	callWatch      = "drive.changes.watch"
	callStop       = "drive.channels.stop"
	callChanges    = "drive.changes.list"
)

// noChangeCalls is what a scheduled incremental sync of a library without
// changes calls: changes.list once (the incremental figure "no change").
const noChangeCalls = 1

// renewalMargin is how long before a channel expires the daemon registers
// its successor (package push): a tenth of push.channelTtl, at most an
// hour, at least 2 s.
func renewalMargin(ttl time.Duration) time.Duration {
	return max(min(ttl/10, time.Hour), 2*time.Second)
}

// renewalsPerHour is how many renewals an hour feeds channels of ttl make.
func renewalsPerHour(feeds int, ttl time.Duration) float64 {
	return float64(feeds) * float64(time.Hour) / float64(ttl-renewalMargin(ttl))
}

// productionTTL is push.channelTtl's default, to which the calls at rest
// are extrapolated.
const productionTTL = 24 * time.Hour

// pushRestFigures runs a daemon of sc.push.restDrives shared-drive
// libraries (a feed each) with push on, its channels asked to live
// sc.push.restTTL so that each is renewed within the window, the
// incremental schedule at sc.push.restSchedule (the safety net), and
// counts the Drive calls by method over sc.push.restWindow at rest: beyond
// the safety net's (changes.list, one per scheduled sync), only the
// renewals' (changes.getStartPageToken, changes.watch, channels.stop) are
// expected. The window starts and ends with no sync running.
func (e *env) pushRestFigures(ctx context.Context, t *table) error {
	sc := e.sc.push
	pw, closeWorld, err := e.newPushWorld("push-rest")
	if err != nil {
		return err
	}
	defer closeWorld()
	start := time.Now()
	for i := range sc.restDrives {
		lib, err := pw.world.buildPushDrive(ctx, fmt.Sprintf("rest-drive-%03d", i+1), storageAccount, restFolders)
		if err != nil {
			return err
		}
		pw.libs = append(pw.libs, lib)
	}
	pw.world.spreadTimes()
	if pw.config, err = pw.world.writeConfig(pw.dir, "rest", libraries(pw.libs)); err != nil {
		return err
	}
	log.Printf("push at rest: %d shared-drive libraries built in %s; push.channelTtl %s, schedule.incremental %q",
		len(pw.libs), since(start), sc.restTTL, sc.restSchedule)
	pw.fake.SetResponseTime(driveLatency)
	address := "http://" + pw.world.listen + pushPath
	env := append(pushEnv(address, sc.restTTL), "FOLDERMIRROR_SCHEDULE_INCREMENTAL="+sc.restSchedule)
	start = time.Now()
	srv, _, err := pw.startServe(ctx, "serve-push-rest", pw.world.adminListen, nil, env...)
	if err != nil {
		return err
	}
	defer srv.stop(15 * time.Second)
	if err := waitCovered(ctx, pw.fake, pw.libs, 3*time.Minute); err != nil {
		return fmt.Errorf("%w: %s", err, logTail(srv))
	}
	covered := since(start)
	admin := pw.world.adminListen
	if err := waitNoneRunning(ctx, admin); err != nil {
		return err
	}
	before, err := readMetrics(ctx, admin)
	if err != nil {
		return err
	}
	log.Printf("  every feed watched %s after the start; %s at rest", covered, sc.restWindow)
	pw.fake.ResetCalls()
	start = time.Now()
	uncovered := map[string]bool{}
	samples := 0
	for time.Since(start) < sc.restWindow {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		watched := coveredFeeds(pw.fake)
		for _, l := range pw.libs {
			if !watched[feedKey(l)] {
				uncovered[feedKey(l)] = true
			}
		}
		samples++
	}
	if err := waitNoneRunning(ctx, admin); err != nil {
		return err
	}
	window := time.Since(start)
	calls, methods := driveCalls(pw.fake)
	after, err := readMetrics(ctx, admin)
	if err != nil {
		return err
	}
	scheduled := total(syncsStarted(after, "incremental")) - total(syncsStarted(before, "incremental"))
	renewal := methods[callStartToken] + methods[callWatch] + methods[callStop]
	safety := min(methods[callChanges], int(scheduled)*noChangeCalls)
	other := calls - renewal - safety
	perHour := func(n int) float64 { return float64(n) * float64(time.Hour) / float64(window) }
	// A renewal stops its predecessor; one that expired first (the keeper
	// late at a short push.channelTtl) is deleted only: with the default
	// push.channelTtl, every renewal calls channels.stop.
	perRenewal := float64(methods[callStartToken]+methods[callWatch])/float64(max(methods[callWatch], 1)) + 1
	nFeeds := feeds(pw.libs)
	fig := fmt.Sprintf("at rest, %d shared-drive libraries", len(pw.libs))
	t.add(row{section: sectionPush, figure: fig + ": Drive calls other than channel renewals and the safety-net schedule's",
		value: float64(other), unit: unitCalls, cmp: exactly, limit: 0})
	t.add(row{section: sectionPush, figure: fmt.Sprintf("%s: channel renewals' calls per hour, push.channelTtl %s (measured)", fig, sc.restTTL),
		value: perHour(renewal), unit: unitCalls, cmp: info})
	t.add(row{section: sectionPush, figure: fmt.Sprintf("%s: channel renewals' calls per hour, extrapolated to push.channelTtl %s", fig, productionTTL),
		value: perRenewal * renewalsPerHour(nFeeds, productionTTL), unit: unitCalls, cmp: info})
	t.add(row{section: sectionPush, figure: fmt.Sprintf("%s: safety-net calls per hour, schedule.incremental %q", fig, sc.restSchedule),
		value: perHour(safety), unit: unitCalls, cmp: info})
	t.add(row{section: sectionPush, figure: fig + ": feeds some moment of the window found without a live channel",
		value: float64(len(uncovered)), unit: unitCalls, cmp: info})
	t.note("push notifications, %s (%d folders each, a feed each): every feed had a live channel %s after the daemon's start; "+
		"over %s at rest (from and to no sync running) the fake answered %d Drive calls %v; the schedule ran %.0f incremental syncs, "+
		"of %d call each with no change (%d calls allowed the safety net); the renewals' %d calls made %d channels (%.1f calls a renewal with its predecessor's stop; "+
		"the margin predicts %.0f renewals an hour at push.channelTtl %s, %.1f at %s); the live channels sampled %d times, once a second.",
		fig, restFolders, covered, window.Round(time.Second), calls, methods, scheduled, noChangeCalls, safety, renewal,
		methods[callWatch], perRenewal, renewalsPerHour(nFeeds, sc.restTTL), sc.restTTL, renewalsPerHour(nFeeds, productionTTL), productionTTL, samples)
	return nil
}

// waitNoneRunning waits until the daemon's /status shows no library
// syncing.
func waitNoneRunning(ctx context.Context, admin string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		running, err := runningLibraries(ctx, admin)
		if err != nil {
			return err
		}
		if !slices.Contains(slices.Collect(maps.Values(running)), true) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("libraries still syncing two minutes on")
}
