package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/foldermirror/foldermirror/googlefake"
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
)

// apiUsers are the users whose tokens the API figures mint: alice and bob
// are in the staff group, carol sees the library through the domain grant.
var apiUsers = []string{"alice@" + domain, "bob@" + domain, "carol@" + domain}

// library is a library of the world.
type library struct {
	ID, Name                    string
	RootFolderID, SharedDriveID string
	// Folders is how many folders the library has, its root included.
	Folders int
	// OwnPermissions is how many folders have a permission set on
	// themselves (shared drives only).
	OwnPermissions int
}

// world is what the fake holds: the My Drive library with its folder
// "wide", and the shared drives of the sync figures.
type world struct {
	fake    *googlefake.Server
	myDrive library
	// wide is the folder with wideChildren children; deep a folder at the
	// deepest level, whose permissions figure 4 reads.
	wide, deep string
	// drives: every folder with a permission of its own, then one in ten.
	drives []library
	// keyFile is the service-account key; adminListen and listen the ports
	// the configurations give the daemon.
	keyFile, adminListen, listen string
}

// buildWorld fills the fake: users, a group, the My Drive library, and the
// shared drives when withDrives; and writes the service-account key in dir.
func buildWorld(ctx context.Context, fake *googlefake.Server, sc scale, withDrives bool, dir string) (*world, error) {
	fake.Seed(1)
	w := &world{fake: fake}
	for _, u := range append([]string{storageAccount, adminAccount}, apiUsers...) {
		fake.AddUser(u)
	}
	fake.MakeAdmin(adminAccount)
	fake.AddGroup(staffGroup, apiUsers[0], apiUsers[1])
	start := time.Now()
	if err := w.buildMyDrive(ctx, sc); err != nil {
		return nil, err
	}
	log.Printf("built the My Drive library: %s folders in %s", thousands(float64(w.myDrive.Folders)), since(start))
	if withDrives {
		for _, every := range []int{1, 10} {
			start := time.Now()
			lib, err := w.buildSharedDrive(ctx, sc.driveFolders, every)
			if err != nil {
				return nil, err
			}
			w.drives = append(w.drives, lib)
			log.Printf("built shared drive %s: %s folders in %s", lib.ID, thousands(float64(lib.Folders)), since(start))
		}
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
// direct on some folders and inherited on the others, and roles vary.
var levelGrants = []googlefake.Permission{
	1: {Type: "group", Role: "commenter", EmailAddress: staffGroup, DisplayName: "Staff"},
	2: {Type: "user", Role: "writer", EmailAddress: apiUsers[0], DisplayName: "Alice"},
	3: {Type: "user", Role: "commenter", EmailAddress: apiUsers[1], DisplayName: "Bob"},
	4: {Type: "domain", Role: "commenter", Domain: domain, AllowFileDiscovery: true},
	5: {Type: "group", Role: "writer", EmailAddress: staffGroup, DisplayName: "Staff"},
	6: {Type: "user", Role: "writer", EmailAddress: apiUsers[1], DisplayName: "Bob"},
}

// buildMyDrive makes the My Drive library, owned by the storage account
// (whose My Drive holds nothing else, so that listing it lists the library
// only): the root, the folder "wide" and its children, and a tree of the
// rest, sc.myDriveDepth levels deep. Each folder is shared as it is made,
// before it has children, which keeps the fake's work small.
func (w *world) buildMyDrive(ctx context.Context, sc scale) error {
	root := w.fake.CreateFolder(storageAccount, "", "Bench library")
	for _, p := range rootGrants {
		w.fake.Share(root, p)
	}
	create := func(parent string, level, i int, name string) string {
		id := w.fake.CreateFolder(storageAccount, parent, name)
		if i%2 == 0 && level < len(levelGrants) {
			w.fake.Share(id, levelGrants[level])
		}
		return id
	}
	w.wide = create(root, 1, 1, "wide")
	for i := range sc.wideChildren {
		create(w.wide, 2, i, fmt.Sprintf("Child %04d", i))
	}
	rest := sc.myDriveFolders - 2 - sc.wideChildren
	deep, err := growLevels(ctx, root, rest, sc.myDriveDepth, func(parent string, level, i int) string {
		return create(parent, level, i, folderName(level, i))
	})
	if err != nil {
		return err
	}
	w.deep = deep
	w.myDrive = library{ID: "bench-mydrive", Name: "Bench library", RootFolderID: root, Folders: sc.myDriveFolders}
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
// what is left, spread evenly over its parents. create makes the i-th folder
// of a level. growLevels returns a folder of the deepest level.
func growLevels(ctx context.Context, root string, n, depth int, create func(parent string, level, i int) string) (string, error) {
	b := 2
	for capacity(b, depth) < n {
		b++
	}
	parents := []string{root}
	for level := 1; level <= depth && n > 0; level++ {
		count := min(len(parents)*b, n)
		next := make([]string, 0, count)
		for i := range count {
			if i%1000 == 0 && ctx.Err() != nil {
				return "", ctx.Err()
			}
			next = append(next, create(parents[i%len(parents)], level, i))
		}
		n -= count
		parents = next
	}
	return parents[len(parents)/2], nil
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

// configYAML returns a configuration of the world with the given libraries,
// the index in dataDir. The schedules do not fire during a run, and the
// callers' request budgets are not spent.
func (w *world) configYAML(dataDir string, libs []library) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "listen: %q\nadminListen: %q\ndataDir: %q\n", w.listen, w.adminListen, dataDir)
	fmt.Fprintf(&b, "storage:\n  credentialsFile: %q\n  endpoint: %q\n  directoryEndpoint: %q\n  requestsPerSecond: 100000\n  concurrency: %d\n",
		w.keyFile, w.fake.DriveEndpoint(), w.fake.DirectoryEndpoint(), concurrency)
	b.WriteString("schedule:\n  incremental: \"@every 24h\"\n  full: \"0 3 1 1 *\"\n")
	// The API figures' load comes from three callers: a per-caller budget
	// would cap it. The budget is still checked on every request.
	b.WriteString("limits:\n  callerRequestsPerSecond: 1000000000\n  callerBurst: 1000000000\n")
	fmt.Fprintf(&b, "auth:\n  google:\n    clientIds: [%q]\n    jwksUrl: %q\n    tokeninfoUrl: %q\n",
		clientID, w.fake.GoogleJWKSURL(), w.fake.TokeninfoURL())
	fmt.Fprintf(&b, "  microsoft:\n    jwksUrls: [%q, %q]\n    tenants:\n      - tenantId: %q\n        applicationIds: [%q]\n",
		w.fake.MicrosoftJWKSURL(), w.fake.MicrosoftJWKSURLv2(), msTenant, msAppID)
	sum := sha256.Sum256([]byte(securityCode))
	fmt.Fprintf(&b, "domains:\n  - name: %s\n    adminEmail: %s\n    users: [%s]\n    securityCodes:\n      - sha256: %q\n        actAs: %q\n",
		domain, adminAccount, strings.Join(apiUsers, ", "), hex.EncodeToString(sum[:]), "user:"+apiUsers[0])
	b.WriteString("libraries:\n")
	for _, l := range libs {
		fmt.Fprintf(&b, "  - id: %s\n    name: %q\n    domain: %s\n    storageAccount: %s\n    folderDefinitionId: standard\n",
			l.ID, l.Name, domain, storageAccount)
		if l.SharedDriveID != "" {
			fmt.Fprintf(&b, "    sharedDriveId: %q\n", l.SharedDriveID)
		} else {
			fmt.Fprintf(&b, "    rootFolderId: %q\n", l.RootFolderID)
		}
	}
	return []byte(b.String())
}

// writeConfig writes a configuration of libs, with its own data directory,
// under dir/name and returns its path.
func (w *world) writeConfig(dir, name string, libs []library) (string, error) {
	base := filepath.Join(dir, name)
	if err := os.MkdirAll(base, 0o750); err != nil {
		return "", err
	}
	path := filepath.Join(base, "config.yaml")
	return path, os.WriteFile(path, w.configYAML(filepath.Join(base, "data"), libs), 0o600)
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
