// Package discovery finds the shared drives of the domains that ask for
// them (DESIGN §10) and keeps them in the library set: what was found is
// in the index, one set for every process sharing it, written by the one
// that holds the storage account's discovery lease; every process follows
// the index and changes its own set (fm.LibrarySet) as the index changes.
//
// A discovery reads drives.list as the storage account: at start, at each
// tick of the incremental schedule (Tick), and when the account's user
// change log carries a change of type drive (Notify, on a notification of
// that log). A drive found whose name the domain's patterns include is a
// library; a drive gone (the account removed from it, the drive deleted,
// or excluded by the configuration) leaves the set, and its rows are
// deleted from the index under its library's lease.
package discovery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/prometheus/client_golang/prometheus"
)

// Drive is what discovery reads of Drive (syncer.Syncer).
type Drive interface {
	// DiscoverDrives returns every shared drive the account is a member
	// of, sorted by ID.
	DiscoverDrives(ctx context.Context, account string) ([]fm.DiscoveredDrive, error)
	// UserChangesToken returns the token the account's user change log is
	// read from.
	UserChangesToken(ctx context.Context, account string) (string, error)
	// DrivesChanged tells whether the account's user change log carries a
	// change of type drive since token, and the token to read from next.
	DrivesChanged(ctx context.Context, account, token string) (bool, string, error)
}

// Options say which domains discover their drives and with what.
type Options struct {
	// Rules are the domains' sharedDrives configurations.
	Rules []fm.SharedDriveDiscovery
	// Libraries is the set the discovered libraries are kept in.
	Libraries *fm.LibrarySet
	// Store is the index's; Leases its leases (a storage account's
	// discovery lease, a library's to delete its rows).
	Store  fm.DiscoveryStore
	Leases fm.Leases
	Drive  Drive
	// FollowEvery is how often a process reads the index for what another
	// found (1 s by default).
	FollowEvery time.Duration
	// DeleteLeaseWait bounds the wait for a library's lease before its rows
	// are deleted (a minute by default); past it, the next discovery tries
	// again.
	DeleteLeaseWait time.Duration
	Logger          *slog.Logger
	Metrics         *Metrics
	// Now is the clock; time.Now by default.
	Now func() time.Time
}

// Discoverer runs the domains' discoveries and keeps the set of libraries
// in step with the index. It is safe for concurrent use.
type Discoverer struct {
	opts   Options
	logger *slog.Logger
	// asked carries the discoveries asked for.
	asked chan request

	mu sync.Mutex
	// known is each domain's discovery as last read or written.
	known map[string]fm.Discovery
	// tokens are the user change log tokens of the accounts whose lease
	// this process held at its last discovery.
	tokens map[string]string
	// pendingDeletes are the libraries whose rows are to be deleted.
	pendingDeletes map[string]bool
	// swept are the domains whose drives that the configuration excludes
	// had their rows deleted, once after start.
	swept map[string]bool
	// heldWhenNotified are the accounts whose notified discovery found the
	// lease held: another process was discovering, maybe since before the
	// change notified. Each is discovered again at the next follow tick,
	// until this process gets the lease.
	heldWhenNotified map[string]bool
	// firstDone is closed once Run's first discovery has ended.
	firstDone chan struct{}
}

// New returns a Discoverer of opts' rules.
func New(opts Options) *Discoverer {
	opts.Logger = cmp.Or(opts.Logger, slog.Default())
	opts.FollowEvery = cmp.Or(opts.FollowEvery, time.Second)
	opts.DeleteLeaseWait = cmp.Or(opts.DeleteLeaseWait, time.Minute)
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	d := &Discoverer{opts: opts, logger: opts.Logger, asked: make(chan request, 64),
		known: map[string]fm.Discovery{}, tokens: map[string]string{}, pendingDeletes: map[string]bool{}, swept: map[string]bool{},
		heldWhenNotified: map[string]bool{}, firstDone: make(chan struct{})}
	if !d.Enabled() {
		close(d.firstDone)
	}
	return d
}

// FirstDone is closed once Run's first discovery of every domain has ended
// (found drives or failed), at once if no domain discovers its drives.
func (d *Discoverer) FirstDone() <-chan struct{} { return d.firstDone }

// Enabled tells whether any domain discovers its drives.
func (d *Discoverer) Enabled() bool { return len(d.opts.Rules) > 0 }

// Load reads what the index holds of every domain's discovery into the set,
// so that a restarted process serves what was discovered before its first
// discovery ends.
func (d *Discoverer) Load(ctx context.Context) error {
	return d.follow(ctx, "")
}

// Run discovers every domain's drives now, then again on Trigger, Tick and
// Notify, and follows what other processes write, until ctx ends.
func (d *Discoverer) Run(ctx context.Context) {
	if !d.Enabled() {
		return
	}
	d.discoverAsked(ctx, request{})
	close(d.firstDone)
	tick := time.NewTicker(d.opts.FollowEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case req := <-d.asked:
			d.discoverAsked(ctx, req)
		case <-tick.C:
			if err := d.follow(ctx, ""); err != nil && ctx.Err() == nil {
				d.logger.Warn("could not read the discovered drives from the index", "err", err)
			}
			d.retryNotified(ctx)
			d.deletePending(ctx)
		}
	}
}

// request is a discovery asked for.
type request struct {
	// account, when not "", is a storage account whose user log was
	// notified: its domains' drives are listed if the log carries a drive
	// change.
	account string
	// within, when not 0, makes it the incremental schedule's tick: a
	// domain whose scheduled discovery began less than within ago, on any
	// process, is not discovered.
	within time.Duration
}

// Trigger asks for a discovery of every domain's drives now. It never
// blocks.
func (d *Discoverer) Trigger() { d.ask(request{}) }

// Tick is the incremental schedule's tick: it asks for a discovery of every
// domain's drives but those whose scheduled discovery began less than
// within ago, on any process sharing the index (replicas' schedules tick
// at their own times: together, they discover as often as one would). It
// never blocks.
func (d *Discoverer) Tick(within time.Duration) { d.ask(request{within: within}) }

// Notify says the user change log of a storage account changed: its drives
// are discovered again if the log carries a change of type drive. It never
// blocks; an account no domain discovers with is ignored.
func (d *Discoverer) Notify(account string) {
	if slices.ContainsFunc(d.opts.Rules, func(r fm.SharedDriveDiscovery) bool { return r.StorageAccount == account }) {
		d.ask(request{account: account})
	}
}

// Accounts returns the storage accounts that discover drives, sorted, each
// once: their user change logs tell of drives added and removed.
func (d *Discoverer) Accounts() []string {
	var out []string
	for _, r := range d.opts.Rules {
		out = append(out, r.StorageAccount)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (d *Discoverer) ask(req request) {
	select {
	case d.asked <- req:
	default: // as many asked already: they cover this one
	}
}

// discoverAsked runs the discoveries req asks for: every rule's, or those
// of its account.
func (d *Discoverer) discoverAsked(ctx context.Context, req request) {
	for i := range d.opts.Rules {
		r := &d.opts.Rules[i]
		if req.account != "" && r.StorageAccount != req.account {
			continue
		}
		if err := d.discover(ctx, r, req); err != nil && ctx.Err() == nil {
			d.logger.Warn("shared drive discovery failed; the drives found before are still served",
				"domain", r.Domain, "storageAccount", r.StorageAccount, "err", err)
		}
	}
	d.deletePending(ctx)
}

// discover runs one domain's discovery, as req asks, under its account's
// lease, unless another process holds it (that one discovers, this one
// follows). A notified discovery that finds the lease held is tried again
// at the next follow tick: the other process's listing may have been read
// before the change.
func (d *Discoverer) discover(ctx context.Context, r *fm.SharedDriveDiscovery, req request) error {
	lease, err := d.opts.Leases.Acquire(ctx, fm.DiscoveryLease(r.StorageAccount))
	if errors.Is(err, fm.ErrLeaseHeld) {
		if req.account != "" {
			d.mu.Lock()
			d.heldWhenNotified[r.StorageAccount] = true
			d.mu.Unlock()
		}
		return nil
	}
	if err != nil {
		return err
	}
	defer lease.Release()
	if due, err := d.due(ctx, r, req); err != nil || !due {
		return err
	}
	drives, err := d.opts.Drive.DiscoverDrives(ctx, r.StorageAccount)
	rec := fm.Discovery{Domain: r.Domain, StorageAccount: r.StorageAccount, At: d.opts.Now().UTC(), Drives: drives}
	if err != nil {
		rec.Error, rec.Drives = err.Error(), nil
	} else if drives == nil {
		rec.Drives = []fm.DiscoveredDrive{} // none: not "keep them"
	}
	if perr := d.opts.Store.PutDiscovery(ctx, rec, lease.Fence()); perr != nil {
		return errors.Join(err, fmt.Errorf("record the discovery of %s: %w", r.Domain, perr))
	}
	if err != nil {
		d.opts.Metrics.failures.WithLabelValues(r.Domain).Inc()
		return err
	}
	d.mu.Lock()
	before := d.known[r.Domain].Drives // as the index held them, before this discovery
	d.mu.Unlock()
	d.sweepExcluded(r, before, drives)
	return d.follow(ctx, r.Domain)
}

// due tells whether the discovery req asks for lists the drives of r's
// domain: a notified one if the account's user log carries a drive change,
// a scheduled one unless a scheduled one began less than req.within ago.
// Call it holding the account's lease: it takes the token of the log to
// read from next.
func (d *Discoverer) due(ctx context.Context, r *fm.SharedDriveDiscovery, req request) (bool, error) {
	switch {
	case req.account != "":
		return d.drivesChanged(ctx, r.StorageAccount)
	case req.within > 0:
		claimed, err := d.opts.Leases.ClaimScheduledRun(ctx, scheduledRunName(r.Domain), "incremental", req.within)
		if err != nil || !claimed {
			return false, err
		}
	}
	return true, d.takeToken(ctx, r.StorageAccount)
}

// scheduledRunName names a domain's scheduled discoveries in the claims of
// scheduled runs (fm.Leases.ClaimScheduledRun).
func scheduledRunName(domain string) string { return "discovery:" + domain }

// retryNotified runs again the notified discoveries that found the lease
// held.
func (d *Discoverer) retryNotified(ctx context.Context) {
	d.mu.Lock()
	accounts := slices.Sorted(maps.Keys(d.heldWhenNotified))
	clear(d.heldWhenNotified)
	d.mu.Unlock()
	for _, account := range accounts {
		d.discoverAsked(ctx, request{account: account})
	}
}

// sweepExcluded has the rows of the drives r excludes deleted, once after
// start: a configuration that excludes a drive takes it out of the set
// before any discovery, so no discovery sees it leave. Both lists count:
// the drives the index held before (a drive excluded and then left, or
// deleted, is in those alone) and those just listed (an excluded drive
// renamed since is excluded under its new name).
func (d *Discoverer) sweepExcluded(r *fm.SharedDriveDiscovery, before, listed []fm.DiscoveredDrive) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.swept[r.Domain] {
		return
	}
	d.swept[r.Domain] = true
	for _, dr := range slices.Concat(before, listed) {
		if !r.Includes(dr.Name) {
			d.pendingDeletes[dr.ID] = true
		}
	}
}

// takeToken saves the token of the account's user log from which the next
// notification is read: taken before the drives are listed, so that no
// change between the two is missed.
func (d *Discoverer) takeToken(ctx context.Context, account string) error {
	token, err := d.opts.Drive.UserChangesToken(ctx, account)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.tokens[account] = token
	d.mu.Unlock()
	return nil
}

// drivesChanged reads the account's user log from the saved token: true if
// it carries a drive change, or if there is no saved token (this process
// has not discovered the account's drives since it took the lease).
func (d *Discoverer) drivesChanged(ctx context.Context, account string) (bool, error) {
	d.mu.Lock()
	token := d.tokens[account]
	d.mu.Unlock()
	if token == "" {
		return true, d.takeToken(ctx, account)
	}
	changed, next, err := d.opts.Drive.DrivesChanged(ctx, account, token)
	if err != nil {
		return false, err
	}
	d.mu.Lock()
	d.tokens[account] = next
	d.mu.Unlock()
	return changed, nil
}

// follow reads the discoveries the index holds and, for each domain whose
// drives changed since last read, makes the set's libraries of the domain
// those the rule includes. The process that discovered holderOf's drives
// deletes the rows of those that left.
func (d *Discoverer) follow(ctx context.Context, holderOf string) error {
	if !d.Enabled() {
		return nil
	}
	recs, err := d.opts.Store.Discoveries(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, rec := range recs {
		r := d.rule(rec.Domain)
		if r == nil {
			continue // a domain no longer discovering: its libraries were never added
		}
		d.mu.Lock()
		known, seen := d.known[rec.Domain]
		d.mu.Unlock()
		if seen && known.Revision == rec.Revision {
			d.remember(rec, known.Drives)
			continue
		}
		drives, rev, err := d.opts.Store.DiscoveredDrives(ctx, rec.Domain)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rec.Revision = rev
		d.remember(rec, drives)
		d.apply(r, drives, rec.Domain == holderOf)
	}
	return errors.Join(errs...)
}

// remember keeps what the index holds of a domain's discovery.
func (d *Discoverer) remember(rec fm.Discovery, drives []fm.DiscoveredDrive) {
	rec.Drives = drives
	d.mu.Lock()
	d.known[rec.Domain] = rec
	d.mu.Unlock()
}

// apply makes the libraries of r's domain in the set those of the drives r
// includes; with deleteRows, those that leave the set have their rows
// deleted.
func (d *Discoverer) apply(r *fm.SharedDriveDiscovery, drives []fm.DiscoveredDrive, deleteRows bool) {
	libs := make([]fm.Library, 0, len(drives))
	for _, dr := range drives {
		if r.Includes(dr.Name) {
			libs = append(libs, r.Library(dr))
		}
	}
	change := d.opts.Libraries.SetDiscovered(r.Domain, libs)
	d.opts.Metrics.libraries.WithLabelValues(r.Domain).Set(float64(len(libs)))
	if len(change.Added)+len(change.Removed) > 0 {
		d.logger.Info("shared drives discovered", "domain", r.Domain, "libraries", len(libs),
			"added", len(change.Added), "removed", len(change.Removed), "changed", len(change.Changed))
	}
	if len(change.Removed) == 0 || !deleteRows {
		return
	}
	d.mu.Lock()
	for _, l := range change.Removed {
		d.pendingDeletes[l.ID] = true
	}
	d.mu.Unlock()
}

// deletePending deletes the rows of the libraries that left the set, each
// under its lease (the process that discovered their leaving does; the
// others leave it to that one). A library that came back meanwhile keeps
// its rows.
func (d *Discoverer) deletePending(ctx context.Context) {
	d.mu.Lock()
	ids := make([]string, 0, len(d.pendingDeletes))
	for id := range d.pendingDeletes {
		ids = append(ids, id)
	}
	d.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		if _, back := d.opts.Libraries.Library(id); back {
			d.forgetDelete(id)
			continue
		}
		if err := d.deleteRows(ctx, id); err != nil {
			d.logger.Warn("could not delete a removed library's rows; trying again", "library", id, "err", err)
			continue
		}
		d.forgetDelete(id)
	}
}

func (d *Discoverer) forgetDelete(id string) {
	d.mu.Lock()
	delete(d.pendingDeletes, id)
	d.mu.Unlock()
}

// deleteRows deletes a library's rows under its lease, waiting for it.
func (d *Discoverer) deleteRows(ctx context.Context, id string) error {
	deadline := d.opts.Now().Add(d.opts.DeleteLeaseWait)
	for {
		lease, err := d.opts.Leases.Acquire(ctx, id)
		if errors.Is(err, fm.ErrLeaseHeld) && d.opts.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
			continue
		}
		if err != nil {
			return err
		}
		err = d.opts.Store.DeleteLibrary(ctx, id, lease.Fence())
		lease.Release()
		return err
	}
}

// rule returns the rule of a domain, nil if none.
func (d *Discoverer) rule(domain string) *fm.SharedDriveDiscovery {
	for i := range d.opts.Rules {
		if d.opts.Rules[i].Domain == domain {
			return &d.opts.Rules[i]
		}
	}
	return nil
}
