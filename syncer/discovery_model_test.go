package syncer_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/discovery"
	"github.com/foldermirror/foldermirror/googleclient"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/googlefake"
	waitfor "github.com/foldermirror/foldermirror/internal/wait"
	"github.com/foldermirror/foldermirror/internal/wire"
	"github.com/foldermirror/foldermirror/push"
	"github.com/foldermirror/foldermirror/schedule"
	drive "google.golang.org/api/drive/v3"
)

var discoveryModelSeeds = flag.Int("discovery-model-seeds", defaultDiscoveryModelSeeds,
	"random sequences of drive events the model-based test of discovery runs in each variant (1, or 3 with -tags long, unless set)")

const (
	// discoveryBatches is how many batches of events a run makes after
	// its first drives, batchEvents the events of a batch.
	discoveryBatches, batchEvents = 6, 4
	// firstDrives are made before the product starts; a run makes
	// maxDrives at most.
	firstDrives, maxDrives = 4, 8
	// discoveryDomain is the domain whose drives are discovered.
	discoveryDomain = "example.com"
	// followEvery is how often the discoverer reads the index.
	followEvery = 20 * time.Millisecond
	// pollEvery is how often a wait for the product to settle looks.
	pollEvery = 5 * time.Millisecond
)

// TestDiscoveredLibrariesMatchDrive is the model-based test of shared drive
// discovery (DESIGN §10): seeded random batches of events in the fake — a
// shared drive made (the storage account made a member before or after
// folders are made in it, or not yet), the account made a member of a
// drive or removed from it, a drive renamed (into or out of the excluded
// names too), deleted, hidden or shown again for the account, the
// discoverer restarted with other Exclude patterns (a new configuration),
// and folders made, renamed, shared and deleted in the drives, each kind
// at least once in a run — and after
// each batch, once the product has settled, the library set's discovered
// libraries must be exactly the drives that drives.list, asked of the fake
// as the storage account, returns and the rule includes, named as Drive
// names them; each one's index must equal a fresh full sync of its drive,
// folder by folder and permission by permission, and Drive's
// permissions.list; Drive must list no change of its drive past its token;
// and each drive that is not one of them must have nothing in the index
// (Library answers ENOTFOUND, its snapshot is empty). The discovery
// recorded in the index must be drives.list's. It runs on bbolt and on
// PostgreSQL (FOLDERMIRROR_TEST_POSTGRES), each without push, the test
// triggering the discoveries and notifying the scheduler of each library,
// and with push, where the fake's notifications to a push.Service over
// loopback start everything: the discoveries (the storage account's user
// log), the syncs (each drive's log), the first syncs and the channels of
// the drives found. With push, the live channels must be exactly those of
// the drives included and of the account's user log. The everyday run runs
// one seed of each of the four variants, -tags long three, and
// -discovery-model-seeds any number. The subtests run at once with the
// package's other parallel tests.
func TestDiscoveredLibrariesMatchDrive(t *testing.T) {
	t.Parallel()
	for _, backend := range fmtest.Backends(t) {
		for _, withPush := range []bool{false, true} {
			for seed := range uint64(*discoveryModelSeeds) {
				t.Run(fmt.Sprintf("%s/push %t/seed %d", backend, withPush, seed), func(t *testing.T) {
					t.Parallel()
					runDiscoveryModel(t, backend, withPush, seed)
				})
			}
		}
	}
}

// runDiscoveryModel runs one seeded sequence of batches of drive events,
// the product's index on backend, with push or without.
func runDiscoveryModel(t *testing.T, backend string, withPush bool, seed uint64) {
	w := newDriveWorld(t, seed)
	for range firstDrives {
		w.addDrive()
	}
	r := startDiscoveryRig(t, backend, withPush, w)
	w.reconfigure = r.restartDiscoverer
	r.settleAndCheck("at start")
	for batch := range discoveryBatches {
		for range batchEvents {
			w.event()
		}
		r.settleAndCheck(fmt.Sprintf("batch %d", batch))
	}
	t.Logf("events: %v", w.counts)
}

// driveWorld is the fake's shared drives, which admin organizes, the
// storage account a member of some, changed at random: the test's model of
// what Drive holds, which drives.list must agree with.
type driveWorld struct {
	rng  *rand.Rand
	fake *googlefake.Server
	// drives are every drive made, in order.
	drives []*worldDrive
	// exclude are the Exclude patterns of the discoverer's configuration
	// now; reconfigure restarts the discoverer with others.
	exclude     []string
	reconfigure func(exclude []string)
	// unmade are the kinds of events (indexes in driveEvents) the run has
	// not made yet.
	unmade []int
	counts map[string]int // events by kind
	log    strings.Builder
}

// worldDrive is a shared drive of the world.
type worldDrive struct {
	id, name string
	// member is the storage account's permission on the drive, "" when it
	// is not a member.
	member          string
	hidden, deleted bool
	// folders are the drive's folders, each with its parent.
	folders map[string]string
}

// The names drives take, each with a digit, and the Exclude patterns a
// configuration has.
var (
	driveNames     = []string{"Team", "Sales", "Private", "Ops"}
	excludeConfigs = [][]string{nil, {"Private*"}, {"Sales ?", "Ops*"}}
	// folderUsers are the users folders are shared with.
	folderUsers = []string{"ann@example.com", "dov@partner.org"}
)

// newDriveWorld returns a world of no drive yet, on a fake of its own
// seeded with seed, as its random draws are.
func newDriveWorld(t *testing.T, seed uint64) *driveWorld {
	fake := startFake(t)
	fake.Seed(seed)
	fake.AddUser(admin)
	for _, u := range folderUsers {
		fake.AddUser(u)
	}
	w := &driveWorld{rng: rand.New(rand.NewPCG(seed, 11)), fake: fake, counts: map[string]int{}}
	w.unmade = w.rng.Perm(len(driveEvents))
	return w
}

// driveEvents are the events of a batch with their weights. An event that
// finds nothing to act on (no drive the account is a member of, say)
// returns false, and another is drawn.
var driveEvents = []struct {
	name   string
	weight int
	do     func(w *driveWorld) bool
}{
	{"add a drive", 2, (*driveWorld).addDrive},
	{"join a drive", 1, (*driveWorld).join},
	{"leave a drive", 1, (*driveWorld).leave},
	{"rename a drive", 2, (*driveWorld).renameDrive},
	{"delete a drive", 1, (*driveWorld).deleteDrive},
	{"hide or show a drive", 1, (*driveWorld).hide},
	{"reconfigure", 1, (*driveWorld).changeExclude},
	{"create a folder", 2, (*driveWorld).createFolder},
	{"rename a folder", 1, (*driveWorld).renameFolder},
	{"share a folder", 1, (*driveWorld).shareFolder},
	{"delete a folder", 1, (*driveWorld).deleteFolder},
}

// event makes one random event: the first of the kinds not made yet that
// finds something to act on, while there are some, so that every run
// makes each kind (drawn in a seeded order); then one drawn by weight.
func (w *driveWorld) event() {
	for i, kind := range w.unmade {
		if e := driveEvents[kind]; e.do(w) {
			w.counts[e.name]++
			w.unmade = slices.Delete(w.unmade, i, i+1)
			return
		}
	}
	total := 0
	for _, e := range driveEvents {
		total += e.weight
	}
	for {
		n := w.rng.IntN(total)
		for _, e := range driveEvents {
			if n -= e.weight; n >= 0 {
				continue
			}
			if e.do(w) {
				w.counts[e.name]++
				return
			}
			break
		}
	}
}

func (w *driveWorld) logf(format string, args ...any) {
	fmt.Fprintf(&w.log, "  "+format+"\n", args...)
}

func (w *driveWorld) driveName() string {
	return fmt.Sprintf("%s %d", driveNames[w.rng.IntN(len(driveNames))], w.rng.IntN(3))
}

// pickDrive returns a random drive of those that ok accepts, nil if none:
// three times in four one the storage account is a member of, if ok
// accepts one (those are the product's libraries).
func (w *driveWorld) pickDrive(ok func(d *worldDrive) bool) *worldDrive {
	var in, members []*worldDrive
	for _, d := range w.drives {
		if d.deleted || !ok(d) {
			continue
		}
		in = append(in, d)
		if d.member != "" {
			members = append(members, d)
		}
	}
	if len(members) > 0 && w.rng.IntN(4) > 0 {
		in = members
	}
	if len(in) == 0 {
		return nil
	}
	return in[w.rng.IntN(len(in))]
}

func anyDrive(*worldDrive) bool           { return true }
func isMember(d *worldDrive) bool         { return d.member != "" }
func isNotMember(d *worldDrive) bool      { return d.member == "" }
func hasFolders(d *worldDrive) bool       { return len(d.folders) > 0 }
func (d *worldDrive) String() string      { return fmt.Sprintf("%s (%q)", d.id, d.name) }
func (d *worldDrive) folderIDs() []string { return slices.Sorted(maps.Keys(d.folders)) }

// addDrive makes a drive of a few folders: the storage account is made a
// member before they are made, after, or not at all (a later join may).
func (w *driveWorld) addDrive() bool {
	if len(w.drives) == maxDrives {
		return false
	}
	d := &worldDrive{name: w.driveName(), folders: map[string]string{}}
	d.id = w.fake.CreateSharedDrive(d.name, admin)
	w.drives = append(w.drives, d)
	when := w.rng.IntN(4) // 0: before the folders, 1 and 2: after, 3: not a member
	w.logf("add the drive %s, the account a member %s", d, [...]string{"before its folders", "after them", "after them", "not yet"}[when])
	if when == 0 {
		w.makeMember(d)
	}
	for range w.rng.IntN(4) {
		w.newFolder(d)
	}
	if when == 1 || when == 2 {
		w.makeMember(d)
	}
	return true
}

func (w *driveWorld) makeMember(d *worldDrive) {
	d.member = w.fake.Share(d.id, googlefake.Permission{Type: "user", Role: "fileOrganizer", EmailAddress: storage})
}

func (w *driveWorld) join() bool {
	d := w.pickDrive(isNotMember)
	if d == nil {
		return false
	}
	w.logf("the account joins %s", d)
	w.makeMember(d)
	return true
}

func (w *driveWorld) leave() bool {
	d := w.pickDrive(isMember)
	if d == nil {
		return false
	}
	w.logf("the account leaves %s", d)
	w.fake.Unshare(d.id, d.member)
	d.member = ""
	return true
}

func (w *driveWorld) renameDrive() bool {
	d := w.pickDrive(anyDrive)
	if d == nil {
		return false
	}
	name := w.driveName()
	w.logf("rename the drive %s to %q", d, name)
	w.fake.ModifyDrive(d.id, func(dr *drive.Drive) { dr.Name = name })
	d.name = name
	return true
}

func (w *driveWorld) deleteDrive() bool {
	d := w.pickDrive(anyDrive)
	if d == nil {
		return false
	}
	w.logf("delete the drive %s", d)
	w.fake.DeleteSharedDrive(d.id)
	d.deleted, d.member, d.folders = true, "", nil
	return true
}

// hide hides a drive the account is a member of from the account's view,
// or shows it again.
func (w *driveWorld) hide() bool {
	d := w.pickDrive(isMember)
	if d == nil {
		return false
	}
	d.hidden = !d.hidden
	w.logf("hide the drive %s: %t", d, d.hidden)
	w.fake.HideDrive(d.id, storage, d.hidden)
	return true
}

// changeExclude restarts the discoverer with other Exclude patterns.
func (w *driveWorld) changeExclude() bool {
	others := slices.DeleteFunc(slices.Clone(excludeConfigs), func(c []string) bool { return slices.Equal(c, w.exclude) })
	w.exclude = others[w.rng.IntN(len(others))]
	w.logf("restart the discoverer excluding %q", w.exclude)
	w.reconfigure(w.exclude)
	return true
}

func (w *driveWorld) createFolder() bool {
	d := w.pickDrive(anyDrive)
	if d == nil {
		return false
	}
	id := w.newFolder(d)
	w.logf("create the folder %s in %s (under %s)", id, d, d.folders[id])
	return true
}

// newFolder makes a folder in d, under its root or one of its folders.
func (w *driveWorld) newFolder(d *worldDrive) string {
	parent := d.id
	if ids := d.folderIDs(); len(ids) > 0 && w.rng.IntN(2) == 0 {
		parent = ids[w.rng.IntN(len(ids))]
	}
	id := w.fake.CreateFolder(admin, parent, fmt.Sprint("f", w.rng.IntN(10)))
	d.folders[id] = parent
	return id
}

// pickFolder returns a random folder of a random drive that has some.
func (w *driveWorld) pickFolder() (*worldDrive, string) {
	d := w.pickDrive(hasFolders)
	if d == nil {
		return nil, ""
	}
	ids := d.folderIDs()
	return d, ids[w.rng.IntN(len(ids))]
}

func (w *driveWorld) renameFolder() bool {
	d, id := w.pickFolder()
	if d == nil {
		return false
	}
	w.logf("rename the folder %s of %s", id, d)
	w.fake.Rename(id, fmt.Sprint("g", w.rng.IntN(10)))
	return true
}

func (w *driveWorld) shareFolder() bool {
	d, id := w.pickFolder()
	if d == nil {
		return false
	}
	p := googlefake.Permission{Type: "user", Role: []string{"reader", "writer"}[w.rng.IntN(2)],
		EmailAddress: folderUsers[w.rng.IntN(len(folderUsers))]}
	w.logf("share the folder %s of %s with %s as %s", id, d, p.EmailAddress, p.Role)
	w.fake.Share(id, p)
	return true
}

// deleteFolder deletes a folder, and with it the folders under it.
func (w *driveWorld) deleteFolder() bool {
	d, id := w.pickFolder()
	if d == nil {
		return false
	}
	w.logf("delete the folder %s of %s", id, d)
	w.fake.Delete(id)
	gone := map[string]bool{id: true}
	for changed := true; changed; {
		changed = false
		for f, parent := range d.folders {
			if gone[parent] && !gone[f] {
				gone[f], changed = true, true
			}
		}
	}
	for f := range gone {
		delete(d.folders, f)
	}
	return true
}

// members returns the drives the storage account is a member of, as
// drives.list returns them.
func (w *driveWorld) members() []fm.DiscoveredDrive {
	var out []fm.DiscoveredDrive
	for _, d := range w.drives {
		if !d.deleted && d.member != "" {
			out = append(out, fm.DiscoveredDrive{ID: d.id, Name: d.name, Hidden: d.hidden})
		}
	}
	return fm.DiscoveredDrivesSorted(out)
}

// discoveryRig is the product, wired as the daemon wires it
// (cmd/foldermirror/syncing.go): one library set that the syncer, the
// scheduler, the discoverer and, with push, the push service share.
type discoveryRig struct {
	t     *testing.T
	world *driveWorld
	env   *env
	sched *schedule.Scheduler
	// discoverer is the running discoverer; stopDiscoverer stops it.
	discoverer     liveDiscoverer
	stopDiscoverer func()
	push           *push.Service  // nil: push off
	drive          *drive.Service // Drive as the storage account
}

// liveDiscoverer is the discoverer running now, which the test replaces
// when it restarts it with another configuration: the push service's
// Discovery.
type liveDiscoverer struct {
	atomic.Pointer[discovery.Discoverer]
}

// Notify tells the running discoverer.
func (l *liveDiscoverer) Notify(account string) { l.Load().Notify(account) }

// startDiscoveryRig starts the product on an index on backend, with push or
// without, in the order the daemon starts it: the discoverer loads what the
// index holds, the scheduler starts, then the discoverer and the push
// service run.
func startDiscoveryRig(t *testing.T, backend string, withPush bool, w *driveWorld) *discoveryRig {
	t.Helper()
	e := newEnvOn(t, backend, w.fake)
	e.set = fm.NewLibrarySet(nil)
	e.restartSyncer()
	r := &discoveryRig{t: t, world: w, env: e, drive: fmtest.DriveAs(t, w.fake, storage)}
	opts := wire.SchedulerOptions(e.cfg, schedule.Options{Syncer: e.s, Leases: e.db.Leases(), Index: e.db, Logger: quiet,
		Plan: schedule.Plan{Libraries: e.set}})
	opts.Incremental, opts.Full = never, never
	opts.Plan.Directories = nil // the libraries alone: the test syncs no directory
	sched, err := schedule.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	r.sched = sched
	t.Cleanup(sched.Stop)
	if withPush {
		r.newPush()
	}
	r.startDiscoverer(w.exclude)
	t.Cleanup(func() { r.stopDiscoverer() })
	sched.Start()
	if withPush {
		r.runPush()
	}
	return r
}

// rule is the domain's sharedDrives configuration with those Exclude
// patterns.
func rule(exclude []string) fm.SharedDriveDiscovery {
	return fm.SharedDriveDiscovery{Domain: discoveryDomain, StorageAccount: storage, Exclude: exclude}
}

// startDiscoverer starts a discoverer of the rule with those Exclude
// patterns, as a process starts it: it loads what the index holds, then
// runs.
func (r *discoveryRig) startDiscoverer(exclude []string) {
	r.t.Helper()
	d := discovery.New(discovery.Options{Rules: []fm.SharedDriveDiscovery{rule(exclude)}, Libraries: r.env.set,
		Store: r.env.db, Leases: r.env.db.Leases(), Drive: r.env.s, FollowEvery: followEvery, Logger: quiet})
	if err := d.Load(context.Background()); err != nil {
		r.t.Fatalf("load the discovered drives: %v", err)
	}
	r.discoverer.Store(d)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	r.stopDiscoverer = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitfor.Bound):
			r.t.Errorf("the discoverer's Run has not returned %s after its context ended", waitfor.Bound)
		}
	}
}

// restartDiscoverer stops the discoverer and starts one with other Exclude
// patterns: a new configuration.
func (r *discoveryRig) restartDiscoverer(exclude []string) {
	r.t.Helper()
	r.stopDiscoverer()
	r.startDiscoverer(exclude)
}

// newPush makes the push service of the set, to which the fake's channels
// post over loopback, and which notifies the scheduler and the discoverer.
func (r *discoveryRig) newPush() {
	r.t.Helper()
	r.env.fake.AllowHTTPWebhooks(true)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	r.t.Cleanup(srv.Close)
	clients, err := googleclient.New(wire.GoogleOptions(r.env.cfg))
	if err != nil {
		r.t.Fatal(err)
	}
	r.push, err = push.New(push.Options{Address: srv.URL + "/push/drive", ChannelTTL: channelTTL, Libraries: r.env.set,
		CallsPerSecond: r.env.cfg.Storage.RequestsPerSecond, Watcher: push.NewDriveWatcher(clients.Drive), Channels: r.env.db,
		Leases: r.env.db.Leases(), Notifier: r.sched, DiscoveryAccounts: []string{storage}, Discovery: &r.discoverer, Logger: quiet})
	if err != nil {
		r.t.Fatal(err)
	}
	mux.Handle(r.push.Path(), r.push)
}

// runPush runs the push service until the test ends.
func (r *discoveryRig) runPush() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.push.Run(ctx)
	}()
	r.t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitfor.Bound):
			r.t.Errorf("the push service's Run has not returned %s after its context ended", waitfor.Bound)
		}
	})
}

// settleAndCheck waits until the product has taken in the events so far,
// then checks it against Drive.
func (r *discoveryRig) settleAndCheck(when string) {
	r.t.Helper()
	want := r.included(when)
	if r.push != nil {
		r.settlePushed(when, want)
	} else {
		r.settleByHand(when, want)
	}
	r.check(when, want)
	if r.t.Failed() {
		r.t.Fatalf("after %s; events so far:\n%s", when, &r.world.log)
	}
}

// listDrives returns drives.list, asked as the storage account, sorted by
// ID.
func (r *discoveryRig) listDrives(when string) []fm.DiscoveredDrive {
	r.t.Helper()
	var out []fm.DiscoveredDrive
	err := r.drive.Drives.List().PageSize(100).Fields("nextPageToken,drives(id,name,hidden)").
		Pages(context.Background(), func(l *drive.DriveList) error {
			for _, d := range l.Drives {
				out = append(out, fm.DiscoveredDrive{ID: d.Id, Name: d.Name, Hidden: d.Hidden})
			}
			return nil
		})
	if err != nil {
		r.t.Fatalf("%s: drives.list as %s: %v", when, storage, err)
	}
	return fm.DiscoveredDrivesSorted(out)
}

// included returns the drives that drives.list returns and the rule now
// includes, their names by ID: the libraries there must be. drives.list
// must agree with the test's world.
func (r *discoveryRig) included(when string) map[string]string {
	r.t.Helper()
	listed := r.listDrives(when)
	if model := r.world.members(); !slices.Equal(listed, model) {
		r.t.Fatalf("%s: drives.list returns %v, the test's world %v", when, listed, model)
	}
	rl := rule(r.world.exclude)
	want := map[string]string{}
	for _, d := range listed {
		if rl.Includes(d.Name) {
			want[d.ID] = d.Name
		}
	}
	return want
}

// settleByHand settles the product without push, as the schedule would:
// it triggers a discovery and waits for it to end and the set and the
// index to follow, then notifies the scheduler of each library and waits
// for the syncs to end.
func (r *discoveryRig) settleByHand(when string, want map[string]string) {
	r.t.Helper()
	d := r.discoverer.Load()
	before := time.Now()
	d.Trigger()
	waitfor.Until(r.t, when+": a discovery that ended after the trigger", func() bool {
		return d.Status()[0].LastDiscovery.After(before)
	})
	r.await(when+": the set and the index to follow the discovery", func() string { return r.discoveryProblem(want) })
	for _, id := range r.env.set.IDs() {
		r.sched.Notify(id)
	}
	r.await(when+": the syncs notified to end", func() string {
		if p := r.runningProblem(); p != "" {
			return p
		}
		return r.unsyncedProblem(want)
	})
}

// settlePushed waits until Drive's notifications have brought the product
// to Drive's state: the set, the discovery recorded, the index and the
// channels.
func (r *discoveryRig) settlePushed(when string, want map[string]string) {
	r.t.Helper()
	listed := r.listDrives(when)
	r.await(when+": the notifications to bring the set, the index and the channels to Drive's state", func() string {
		r.env.fake.FlushNotifications()
		for _, problem := range []func() string{
			func() string { return r.discoveryProblem(want) },
			func() string { return r.recordProblem(listed) },
			r.runningProblem,
			func() string { return r.unsyncedProblem(want) },
			func() string { return r.channelProblem(want) },
		} {
			if p := problem(); p != "" {
				return p
			}
		}
		return ""
	})
}

// await polls until problem finds none, failing the test, naming what it
// waited for and the problem left, if one is left after waitfor.Bound.
func (r *discoveryRig) await(what string, problem func() string) {
	r.t.Helper()
	deadline := time.Now().Add(waitfor.Bound)
	for {
		p := problem()
		if p == "" {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("waited %s for %s; still %s\nevents so far:\n%s", waitfor.Bound, what, p, &r.world.log)
		}
		time.Sleep(pollEvery)
	}
}

// discoveryProblem says how the set and the index differ from the
// libraries there must be, "" if they do not: the set's libraries are not
// want, or the index holds a library not in want.
func (r *discoveryRig) discoveryProblem(want map[string]string) string {
	got := map[string]string{}
	for _, l := range r.env.set.List() {
		got[l.ID] = l.Name
	}
	if !maps.Equal(got, want) {
		return fmt.Sprintf("the set's libraries are %v, Drive's drives included %v", got, want)
	}
	for _, d := range r.world.drives {
		if _, ok := want[d.id]; ok {
			continue
		}
		if st, err := r.env.db.Library(context.Background(), d.id); fm.ErrorCode(err) != fm.ENOTFOUND {
			return fmt.Sprintf("the index holds the library of %s, not included: %s; want none (ENOTFOUND)%s",
				d, describeLibrary(st, err), r.leasesHeld())
		}
	}
	return ""
}

// describeLibrary says what the index answers for a library's state.
func describeLibrary(st *fm.LibraryState, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("revision %d, %d folders, synced up to token %s", st.Revision, st.Folders, st.StartPageToken)
}

// leasesHeld names the leases held now, and their holders: a library's
// rows are deleted under its lease.
func (r *discoveryRig) leasesHeld() string {
	held, err := r.env.db.Leases().Holders(context.Background())
	switch {
	case err != nil:
		return fmt.Sprintf(" (the leases cannot be read: %v)", err)
	case len(held) > 0:
		return fmt.Sprintf(" (leases held: %v)", held)
	}
	return ""
}

// runningProblem names the scheduler's jobs that run, "" if none does.
func (r *discoveryRig) runningProblem() string {
	var running []string
	for _, st := range r.sched.Status() {
		if st.Running {
			running = append(running, st.Name)
		}
	}
	if len(running) > 0 {
		return fmt.Sprint("syncs run: ", running)
	}
	return ""
}

// unsyncedProblem names a library of want the index has no state of, or
// whose drive Drive lists changes of past its token; "" if none.
func (r *discoveryRig) unsyncedProblem(want map[string]string) string {
	for _, id := range slices.Sorted(maps.Keys(want)) {
		st, err := r.env.db.Library(context.Background(), id)
		if err != nil {
			return fmt.Sprintf("library %s (%q): %v", id, want[id], err)
		}
		page, err := r.drive.Changes.List(st.StartPageToken).DriveId(id).IncludeItemsFromAllDrives(true).SupportsAllDrives(true).
			IncludeRemoved(true).Fields("newStartPageToken,nextPageToken,changes(changeType,fileId)").Do()
		if err != nil {
			return fmt.Sprintf("changes.list of %s from %s: %v", id, st.StartPageToken, err)
		}
		if len(page.Changes) > 0 {
			ch := page.Changes[0]
			return fmt.Sprintf("library %s (%q) synced up to token %s, yet Drive lists %d changes of its drive past it (the first: %s %q)",
				id, want[id], st.StartPageToken, len(page.Changes), ch.ChangeType, ch.FileId)
		}
	}
	return ""
}

// channelProblem says how the push service's feeds and the fake's live
// channels differ from one channel a drive of want and one of the storage
// account's user log, "" if they do not.
func (r *discoveryRig) channelProblem(want map[string]string) string {
	live := r.env.fake.PushChannels()
	var drives []string
	users := 0
	for _, ch := range live {
		switch {
		case ch.User != storage:
			return fmt.Sprintf("a channel %s watches the log of %s", ch.ID, ch.User)
		case ch.DriveID == "":
			users++
		default:
			drives = append(drives, ch.DriveID)
		}
	}
	slices.Sort(drives)
	if wantDrives := slices.Sorted(maps.Keys(want)); users != 1 || !slices.Equal(drives, wantDrives) {
		return fmt.Sprintf("channels watch the drives %v and %d user logs; want the drives %v and the account's log", drives, users, wantDrives)
	}
	status := r.push.Status()
	for _, st := range status {
		if st.Polling || !slices.ContainsFunc(live, func(ch googlefake.PushChannel) bool { return ch.ID == st.Channel }) {
			return fmt.Sprintf("feed %s: %+v, not covered by a live channel", st.Feed, st)
		}
	}
	if len(status) != len(live) {
		return fmt.Sprintf("%d feeds, %d live channels", len(status), len(live))
	}
	return ""
}

// check compares the product, settled, with Drive: the set's libraries are
// want, with Drive's names; each one's index equals a fresh full sync of its
// drive and Drive's permissions; every other drive has nothing in the
// index; the discovery recorded is drives.list's.
func (r *discoveryRig) check(when string, want map[string]string) {
	r.t.Helper()
	r.checkSet(when, want)
	r.checkRecord(when)
	if len(want) > 0 {
		var specs []string
		for id := range want {
			specs = append(specs, fmt.Sprintf("id: %s, sharedDriveId: %s", id, id))
		}
		fresh := newEnv(r.t, r.env.fake, specs...)
		for _, id := range slices.Sorted(maps.Keys(want)) {
			fresh.sync(id)
			at := fmt.Sprintf("%s, %s (%q)", when, id, want[id])
			compareIndexes(r.t, at, r.env, fresh, id)
			compareWithDrive(r.t, at, r.env, r.drive, id)
		}
	}
	for _, d := range r.world.drives {
		if _, ok := want[d.id]; !ok {
			r.checkGone(when, d)
		}
	}
}

// checkSet checks that the set's libraries are the discovered libraries of
// the drives of want, with their names.
func (r *discoveryRig) checkSet(when string, want map[string]string) {
	r.t.Helper()
	rl := rule(r.world.exclude)
	for _, l := range r.env.set.List() {
		name, ok := want[l.ID]
		if wantLib := rl.Library(fm.DiscoveredDrive{ID: l.ID, Name: name}); !ok || l != wantLib || !r.env.set.Discovered(l.ID) {
			r.t.Errorf("%s: the set has %+v (discovered %t); want %+v, discovered", when, l, r.env.set.Discovered(l.ID), wantLib)
		}
	}
	if n := r.env.set.Len(); n != len(want) {
		r.t.Errorf("%s: the set has %d libraries: %v; want %d: %v", when, n, r.env.set.IDs(), len(want), want)
	}
}

// checkRecord checks that the discovery the index records is drives.list's.
func (r *discoveryRig) checkRecord(when string) {
	r.t.Helper()
	if p := r.recordProblem(r.listDrives(when)); p != "" {
		r.t.Errorf("%s: %s", when, p)
	}
}

// recordProblem says how the discovery the index records differs from
// listed, drives.list's, "" if it does not. With push, the drives' hidden
// state is left aside: hiding a drive logs no change, so no notification
// has the drives discovered again.
func (r *discoveryRig) recordProblem(listed []fm.DiscoveredDrive) string {
	got, _, err := r.env.db.DiscoveredDrives(context.Background(), discoveryDomain)
	if err != nil {
		return fmt.Sprintf("the discovered drives: %v", err)
	}
	listed = slices.Clone(listed)
	if r.push != nil {
		for i := range got {
			got[i].Hidden = false
		}
		for i := range listed {
			listed[i].Hidden = false
		}
	}
	if !slices.Equal(got, listed) {
		return fmt.Sprintf("the index records the drives %v; drives.list returns %v", got, listed)
	}
	return ""
}

// checkGone checks that the index holds nothing of a drive's library.
func (r *discoveryRig) checkGone(when string, d *worldDrive) {
	r.t.Helper()
	ctx := context.Background()
	if st, err := r.env.db.Library(ctx, d.id); fm.ErrorCode(err) != fm.ENOTFOUND {
		r.t.Errorf("%s: the library of %s, not included, answers %+v, %v; want ENOTFOUND", when, d, st, err)
	}
	snap, err := r.env.db.Snapshot(ctx, d.id)
	if len(snap) > 0 || (err != nil && fm.ErrorCode(err) != fm.ENOTFOUND) {
		r.t.Errorf("%s: the library of %s, not included, has %d folders in the index (%v); want none", when, d, len(snap), err)
	}
}
