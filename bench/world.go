package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// The people and credentials of the world.
const (
	domain           = "bench.example"
	storageAccount   = "storage@" + domain
	adminAccount     = "admin@" + domain
	staffGroup       = "staff@" + domain
	serviceAccount   = "bench@bench.iam.gserviceaccount.com"
	clientID         = "bench.apps.googleusercontent.com"
	msTenant         = "3f1c2b4a-7d6e-4c5b-9a8f-1e2d3c4b5a69"
	msAppID          = "9b8a7c6d-5e4f-4a3b-8c2d-1f0e9d8c7b6a"
	securityCode     = "bench-security-code"
	sharedDriveDepth = 4
	myDriveDepth     = 6 // levels below the My Drive library's root
)

// apiUsers are the users whose tokens the API figures mint: alice and bob
// are in the staff group, carol sees the library through the domain grant.
var apiUsers = []string{"alice@" + domain, "bob@" + domain, "carol@" + domain}

// How the My Drive library's folders are shared (-grants).
const (
	// grantsVaried: some folders of each level are shared with one of a
	// pool of users and groups, more near the root; each folder's list is
	// the union of its ancestors' grants, as in a real domain. The targets
	// are measured on this world.
	grantsVaried = "varied"
	// grantsUniform: every other folder of a level re-shares one of the
	// root's principals with a higher role: a handful of distinct lists,
	// the world the bench measured before the varied one.
	grantsUniform = "uniform"
)

// The pool of principals the varied world shares folders with.
const (
	poolUsers  = 200
	poolGroups = 40
)

// shareShare is, by level below the root (index 1 is the root's children),
// the fraction of folders the varied world shares with a principal of the
// pool; deeper levels take the last.
var shareShare = []float64{0, 0.6, 0.4, 0.25, 0.12, 0.06}

// library is a library of the world.
type library struct {
	ID, Name                    string
	RootFolderID, SharedDriveID string
	// StorageAccount reads the library; "" is the world's storageAccount.
	StorageAccount string
	// Folders is how many folders the library has, its root included.
	Folders int
	// OwnPermissions is how many folders have a permission set on
	// themselves (shared drives only).
	OwnPermissions int
}

// world is what one fake holds: the people, and either the My Drive
// library of one size or the shared drives.
type world struct {
	fake *googlefake.Server
	// keyFile is the service-account key; adminListen and listen the ports
	// the configurations give the daemon.
	keyFile, adminListen, listen string

	myDrive library
	// wide is the folder with wideChildren children; deep a folder of the
	// deepest level with the longest permission list, whose permissions
	// the API figures read.
	wide, deep string
	// deepGrants is how many permissions deep has.
	deepGrants int
	// lists counts the distinct permission lists of the library's folders.
	lists int
	// leaves are the folders of the deepest level, inner those of the level
	// above: the incremental figures change them. shared are folders of
	// those two levels with a permission of their own, which they may
	// unshare.
	leaves, inner []string
	shared        []sharedLeaf

	// drives: every folder with a permission of its own, then one in ten.
	drives []library
}

// The span the worlds' files were created in: their createdTime and
// modifiedTime are spread over it (see spreadTimes).
var (
	timesFrom = time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)
	timesTo   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

// spreadTimes spreads the createdTime of every file of the world over the
// years from timesFrom to timesTo, in creation order, as a real library's
// are; half keep it as their modifiedTime, the others get a later one.
// Files made afterwards, and the changes the figures make, get the time
// they are made at, after timesTo. Listings keep their order: the fake
// lists by createdTime, ties in creation order, and the spread keeps
// creation order.
func (w *world) spreadTimes() { w.fake.SpreadTimes(timesFrom, timesTo) }

// sharedLeaf is a folder with a permission set on it.
type sharedLeaf struct{ id, permission string }

// newWorld fills a fresh fake with the people (the storage and admin
// accounts, the API users, the pool of the varied world, their groups) and
// writes the service-account key in dir.
func newWorld(fake *googlefake.Server, dir string) (*world, error) {
	fake.Seed(1)
	w := &world{fake: fake}
	for _, u := range append([]string{storageAccount, adminAccount}, apiUsers...) {
		fake.AddUser(u)
	}
	fake.MakeAdmin(adminAccount)
	fake.AddGroup(staffGroup, apiUsers[0], apiUsers[1])
	for i := range poolUsers {
		fake.AddUser(poolUser(i))
	}
	for g := range poolGroups {
		fake.AddGroup(poolGroup(g), poolUser(g), poolUser(g+poolGroups), poolUser(g+2*poolGroups))
	}
	w.keyFile = filepath.Join(dir, "sa.json")
	if err := os.WriteFile(w.keyFile, fake.ServiceAccountKey(serviceAccount), 0o600); err != nil {
		return nil, err
	}
	var err error
	if w.adminListen, err = freeAddr(); err == nil {
		w.listen, err = freeAddr()
	}
	return w, err
}

func poolUser(i int) string  { return fmt.Sprintf("user%03d@%s", i, domain) }
func poolGroup(i int) string { return fmt.Sprintf("team%02d@%s", i, domain) }

// rootGrants are the four grants of the My Drive library's root; every
// folder inherits them, so each has five permissions with its owner's.
var rootGrants = []googlefake.Permission{
	{Type: "domain", Role: "reader", Domain: domain, AllowFileDiscovery: true},
	{Type: "group", Role: "reader", EmailAddress: staffGroup, DisplayName: "Staff"},
	{Type: "user", Role: "reader", EmailAddress: apiUsers[0], DisplayName: "Alice"},
	{Type: "user", Role: "reader", EmailAddress: apiUsers[1], DisplayName: "Bob"},
}

// levelGrants re-grant one of the root's principals, with a higher role, on
// every other folder of a level (index: the level), so that each grant is
// direct on some folders and inherited on the others, and roles vary. The
// uniform world shares every level so; both worlds share the children of
// "wide" so.
var levelGrants = []googlefake.Permission{
	1: {Type: "group", Role: "commenter", EmailAddress: staffGroup, DisplayName: "Staff"},
	2: {Type: "user", Role: "writer", EmailAddress: apiUsers[0], DisplayName: "Alice"},
	3: {Type: "user", Role: "commenter", EmailAddress: apiUsers[1], DisplayName: "Bob"},
	4: {Type: "domain", Role: "commenter", Domain: domain, AllowFileDiscovery: true},
	5: {Type: "group", Role: "writer", EmailAddress: staffGroup, DisplayName: "Staff"},
	6: {Type: "user", Role: "writer", EmailAddress: apiUsers[1], DisplayName: "Bob"},
}

// poolGrant draws the grant the varied world gives a folder it shares: a
// pool user (most often), a pool group, or one of the root's principals
// again with a higher role.
func poolGrant(rng *rand.Rand) googlefake.Permission {
	role := []string{"reader", "reader", "reader", "reader", "reader", "commenter", "commenter", "writer", "writer", "writer"}[rng.IntN(10)]
	switch r := rng.IntN(100); {
	case r < 80:
		i := rng.IntN(poolUsers)
		return googlefake.Permission{Type: "user", Role: role, EmailAddress: poolUser(i), DisplayName: fmt.Sprintf("User %03d", i)}
	case r < 95:
		g := rng.IntN(poolGroups)
		return googlefake.Permission{Type: "group", Role: role, EmailAddress: poolGroup(g), DisplayName: fmt.Sprintf("Team %02d", g)}
	default:
		p := rootGrants[1+rng.IntN(len(rootGrants)-1)]
		p.Role = []string{"commenter", "writer"}[rng.IntN(2)]
		return p
	}
}

// node is a folder being made, with its permission list (see lists).
type node struct {
	id   string
	list int32
}

// buildMyDrive makes the My Drive library of size folders, owned by the
// storage account (whose My Drive holds nothing else, so that listing it
// lists the library only): the root, the folder "wide" with wideChildren
// children, and a tree of the rest, myDriveDepth levels deep, shared as
// grants says. Each folder is shared as it is made, before it has
// children, which keeps the fake's work small; children are made parent by
// parent, as a tree usually grows.
func (w *world) buildMyDrive(ctx context.Context, size, wideChildren int, grants string) error {
	rng := rand.New(rand.NewPCG(uint64(size), 10))
	lists := newListSet()
	// share shares a folder and merges the grant into its list.
	share := func(n *node, p googlefake.Permission) string {
		n.list = lists.with(n.list, p)
		return w.fake.Share(n.id, p)
	}
	root := node{id: w.fake.CreateFolder(storageAccount, "", "Bench library"),
		list: lists.with(-1, googlefake.Permission{Type: "user", Role: "owner", EmailAddress: storageAccount})}
	for _, p := range rootGrants {
		share(&root, p)
	}
	lists.use(root.list)
	wide := node{id: w.fake.CreateFolder(storageAccount, root.id, "wide"), list: root.list}
	lists.use(wide.list)
	for i := range wideChildren {
		c := node{id: w.fake.CreateFolder(storageAccount, wide.id, fmt.Sprintf("Child %04d", i)), list: wide.list}
		if i%2 == 0 {
			share(&c, levelGrants[2])
		}
		lists.use(c.list)
	}
	w.wide = wide.id
	deepest := 0
	rest := size - 2 - wideChildren
	w.leaves, w.inner = nil, nil
	leaves, err := growLevels(ctx, root, rest, myDriveDepth, func(parent node, level, i int) node {
		n := node{id: w.fake.CreateFolder(storageAccount, parent.id, folderName(level, i)), list: parent.list}
		switch {
		case grants == grantsUniform:
			if i%2 == 0 && level < len(levelGrants) {
				share(&n, levelGrants[level])
			}
		case rng.Float64() < shareShare[min(level, len(shareShare)-1)]:
			if perm := share(&n, poolGrant(rng)); level >= myDriveDepth-1 && len(w.shared) < 10_000 {
				w.shared = append(w.shared, sharedLeaf{id: n.id, permission: perm})
			}
		}
		if level == myDriveDepth-1 {
			w.inner = append(w.inner, n.id)
		}
		lists.use(n.list)
		return n
	})
	if err != nil {
		return err
	}
	for _, n := range leaves {
		w.leaves = append(w.leaves, n.id)
		if l := lists.size(n.list); l > deepest {
			deepest, w.deep = l, n.id
		}
	}
	w.deepGrants = deepest
	w.lists = lists.count()
	w.myDrive = library{ID: "bench-mydrive", Name: "Bench library", RootFolderID: root.id, Folders: size}
	return nil
}

// buildSharedDrive makes a shared drive of n folders (its root excepted),
// sharedDriveDepth levels deep, one folder in every of which has a permission
// of its own; the others have the drive's members only.
func (w *world) buildSharedDrive(ctx context.Context, n, every int) (library, error) {
	name := fmt.Sprintf("Drive own 1 in %d", every)
	id := w.fake.CreateSharedDrive(name, storageAccount)
	w.fake.Share(id, googlefake.Permission{Type: "group", Role: "reader", EmailAddress: staffGroup, DisplayName: "Staff"})
	own, made := 0, 0
	_, err := growLevels(ctx, id, n, sharedDriveDepth, func(parent string, level, i int) string {
		f := w.fake.CreateFolder(storageAccount, parent, folderName(level, i))
		if made%every == 0 {
			u := apiUsers[made%len(apiUsers)]
			w.fake.Share(f, googlefake.Permission{Type: "user", Role: []string{"reader", "writer"}[made%2], EmailAddress: u})
			own++
		}
		made++
		return f
	})
	lib := library{ID: fmt.Sprintf("bench-drive-own-1-in-%d", every), Name: name, SharedDriveID: id,
		Folders: n + 1, OwnPermissions: own}
	return lib, err
}

// growLevels adds n folders under root, level by level, at most depth levels
// deep: each level has b times as many folders as the one above, b the
// smallest branching that fits n in depth levels; the last level made takes
// what is left, spread evenly over its parents. Each parent's children are
// made one after the other. create makes the i-th folder of a level under
// parent. growLevels returns the folders of the deepest level.
func growLevels[T any](ctx context.Context, root T, n, depth int, create func(parent T, level, i int) T) ([]T, error) {
	b := 2
	for capacity(b, depth) < n {
		b++
	}
	parents := []T{root}
	for level := 1; level <= depth && n > 0; level++ {
		count := min(len(parents)*b, n)
		next := make([]T, 0, count)
		for i := range count {
			if i%1000 == 0 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// Children i*len/count .. : parent by parent, evenly spread.
			next = append(next, create(parents[i*len(parents)/count], level, i))
		}
		n -= count
		parents = next
	}
	return parents, nil
}

// capacity is how many folders a tree of branching b holds in depth levels
// below its root.
func capacity(b, depth int) int {
	total, level := 0, 1
	for range depth {
		level *= b
		total += level
	}
	return total
}

var nameWords = strings.Fields("Budget Contracts Design Drafts Archive Invoices Minutes Roadmap Research Reports Specs Templates Review Planning")

func folderName(level, i int) string {
	return fmt.Sprintf("%s %d-%d", nameWords[(level*7+i)%len(nameWords)], level, i)
}

// baseConfig returns a configuration of the world with the given
// libraries, the index in dataDir. The schedules do not fire during a run,
// and the callers' request budgets are not spent.
func (w *world) baseConfig(dataDir string, libs []library) *config.Config {
	c := config.Default()
	c.Listen, c.AdminListen, c.DataDir = w.listen, w.adminListen, dataDir
	c.Storage.CredentialsFile = w.keyFile
	c.Storage.Endpoint, c.Storage.DirectoryEndpoint = w.fake.DriveEndpoint(), w.fake.DirectoryEndpoint()
	c.Storage.RequestsPerSecond, c.Storage.Concurrency = 100000, concurrency
	c.Schedule = config.Schedule{Incremental: "@every 24h", Full: "0 3 1 1 *"}
	// The API figures' load comes from three callers: a per-caller budget
	// would cap it. The budget is still checked on every request.
	c.Limits = config.Limits{CallerRequestsPerSecond: 1e9, CallerBurst: 1e9}
	c.Auth.Google = config.GoogleAuth{ClientIDs: []string{clientID}, JWKSURL: w.fake.GoogleJWKSURL(), TokeninfoURL: w.fake.TokeninfoURL()}
	c.Auth.Microsoft = config.MicrosoftAuth{JWKSURLs: []string{w.fake.MicrosoftJWKSURL(), w.fake.MicrosoftJWKSURLv2()},
		Tenants: []config.Tenant{{TenantID: msTenant, ApplicationIDs: []string{msAppID}}}}
	sum := sha256.Sum256([]byte(securityCode))
	c.Domains = []config.Domain{{Name: domain, AdminEmail: adminAccount, Users: apiUsers,
		SecurityCodes: []config.SecurityCode{{SHA256: hex.EncodeToString(sum[:]), ActAs: "user:" + apiUsers[0]}}}}
	for _, l := range libs {
		c.Libraries = append(c.Libraries, config.Library{ID: l.ID, Name: l.Name, Domain: domain, StorageAccount: cmp.Or(l.StorageAccount, storageAccount),
			FolderDefinitionID: "standard", RootFolderID: l.RootFolderID, SharedDriveID: l.SharedDriveID})
	}
	return c
}

// writeConfig writes a configuration of libs, with its own data directory,
// under dir/name and returns its path.
func (w *world) writeConfig(dir, name string, libs []library) (string, error) {
	return w.writeConfigWith(dir, name, libs, nil)
}

// writeConfigWith is writeConfig with edit, if not nil, applied to the
// configuration before it is written.
func (w *world) writeConfigWith(dir, name string, libs []library, edit func(c *config.Config)) (string, error) {
	base := filepath.Join(dir, name)
	if err := os.MkdirAll(base, 0o750); err != nil {
		return "", err
	}
	c := w.baseConfig(filepath.Join(base, "data"), libs)
	if edit != nil {
		edit(c)
	}
	data, err := yaml.Marshal(c)
	if err != nil {
		return "", err
	}
	path := filepath.Join(base, "config.yaml")
	return path, os.WriteFile(path, data, 0o600)
}

// freeAddr returns a loopback address with a port free at the moment.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// since is the time since start, rounded for logs.
func since(start time.Time) time.Duration { return time.Since(start).Round(time.Millisecond) }
