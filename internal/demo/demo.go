// Package demo builds a generated Workspace domain in the Google fake: users,
// libraries of a few thousand folders and varied sharing, with the
// configuration that syncs and serves it. The demo command, tests and
// benchmarks use it.
package demo

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/foldermirror/foldermirror/internal/googlefake"
)

// Domain is the demo's Workspace domain.
const Domain = "example.com"

// ClientID is the OAuth client the demo's ID tokens are issued for.
const ClientID = "demo.apps.googleusercontent.com"

// StorageAccount is the user the syncer reads Drive as.
const StorageAccount = "storage@" + Domain

// Admin is the domain admin the directory is read as.
const Admin = "admin@" + Domain

// LeadsGroup is a group of the domain, shared a folder of its own.
const LeadsGroup = "leads@" + Domain

// ServiceAccount is the e-mail of the demo's service-account key.
const ServiceAccount = "foldermirror@demo-project.iam.gserviceaccount.com"

// Persona is a demo user and what it is meant to show.
type Persona struct {
	Email string
	About string
}

// Personas are the users the demo prints tokens for; each sees other things.
var Personas = []Persona{
	{"alice@" + Domain, "engineering lead: writer on all of Engineering (file organizer of Leadership only, through the leads group), reader on Sales"},
	{"bob@" + Domain, "sales organizer: all of the Sales shared drive, a few Engineering projects"},
	{"carol@" + Domain, "new hire: only what is shared with the whole domain (the Handbook)"},
	{"pat@partner.org", "partner, outside the domain: the Partner exchange folder only"},
}

// Library is a generated library.
type Library struct {
	ID, Name string
	// RootFolderID or SharedDriveID is set.
	RootFolderID, SharedDriveID string
}

// World is a generated domain inside a fake.
type World struct {
	Fake *googlefake.Server
	// Libraries are the configured libraries.
	Libraries []Library
	// TeamDrives are the shared drives the storage account is a member of
	// that no library lists: the domain discovers them (sharedDrives).
	TeamDrives []Library
}

// Spec sizes a world.
type Spec struct {
	Seed int64
	// FoldersPerLibrary is about how many folders each library gets.
	FoldersPerLibrary int
}

// DefaultSpec is the demo's size: a few thousand folders in all.
var DefaultSpec = Spec{Seed: 1, FoldersPerLibrary: 1200}

// Build fills fake with a generated domain.
func Build(fake *googlefake.Server, spec Spec) *World {
	fake.Seed(uint64(spec.Seed)) // the same IDs every run
	g := &generator{fake: fake, rng: rand.New(rand.NewPCG(uint64(spec.Seed), 7)), budget: spec.FoldersPerLibrary}
	w := &World{Fake: fake}
	for _, p := range Personas {
		fake.AddUser(p.Email)
	}
	fake.AddUser(StorageAccount)
	fake.AddUser(Admin)
	fake.MakeAdmin(Admin)
	fake.AddGroup(LeadsGroup, Personas[0].Email)
	w.Libraries = []Library{g.engineering(), g.sales(), g.partners()}
	w.TeamDrives = []Library{g.teamDrive("Marketing"), g.teamDrive("Legal")}
	return w
}

// teamDrive is a shared drive bob organizes, of a few folders, the storage
// account a member, alice a reader: one the domain discovers.
func (g *generator) teamDrive(name string) Library {
	id := g.fake.CreateSharedDrive(name, Personas[1].Email)
	g.fake.Share(id, user(Personas[0].Email, "reader"))
	g.made = 0
	for range 3 {
		g.grow(Personas[1].Email, g.fake.CreateFolder(Personas[1].Email, id, g.name()), 1)
	}
	g.fake.Share(id, user(StorageAccount, "reader"))
	return Library{ID: id, Name: name, SharedDriveID: id}
}

// AddTeamDrive creates a shared drive as teamDrive does, the storage
// account added last, as an organizer adds a member to a drive that has
// folders already, and returns its ID.
func (w *World) AddTeamDrive(name string) string {
	g := &generator{fake: w.Fake, rng: rand.New(rand.NewPCG(uint64(len(name)), 11)), budget: 12}
	return g.teamDrive(name).ID
}

type generator struct {
	fake   *googlefake.Server
	rng    *rand.Rand
	budget int
	made   int
}

// user shares with a user, named after its address ("alice@..." is "Alice").
func user(email string, role string) googlefake.Permission {
	local, _, _ := strings.Cut(email, "@")
	return googlefake.Permission{Type: "user", Role: role, EmailAddress: email, DisplayName: strings.ToUpper(local[:1]) + local[1:]}
}

// engineering is a My Drive tree owned by the storage account: alice
// writes everywhere, bob reads some projects, the Handbook is shared with
// the domain, a few folders are shared by link only or restrict downloads.
func (g *generator) engineering() Library {
	g.made = 0
	root := g.fake.CreateFolder(StorageAccount, "", "Engineering")
	g.fake.Share(root, user(Personas[0].Email, "writer"))
	handbook := g.fake.CreateFolder(StorageAccount, root, "Handbook")
	g.fake.Share(handbook, googlefake.Permission{Type: "domain", Role: "reader", Domain: Domain, AllowFileDiscovery: true})
	g.grow(StorageAccount, handbook, 3)
	projects := g.fake.CreateFolder(StorageAccount, root, "Projects")
	for i := 0; g.made < g.budget-50; i++ {
		p := g.fake.CreateFolder(StorageAccount, projects, fmt.Sprintf("Project %s", g.name()))
		g.made++
		switch i % 5 {
		case 0:
			g.fake.Share(p, user(Personas[1].Email, "reader"))
		case 1:
			g.fake.Share(p, googlefake.Permission{Type: "anyone", Role: "reader"}) // by link only
		case 2:
			g.fake.Modify(p, func(f *googlefake.File) { f.CopyRequiresWriterPermission = true })
		}
		g.grow(StorageAccount, p, 3)
	}
	leads := g.fake.CreateFolder(StorageAccount, root, "Leadership only")
	g.fake.Share(leads, googlefake.Permission{Type: "group", Role: "fileOrganizer", EmailAddress: LeadsGroup, DisplayName: "Leads"})
	return Library{ID: "lib-eng", Name: "Engineering", RootFolderID: root}
}

// sales is a shared drive: bob organizes it, alice reads it.
func (g *generator) sales() Library {
	g.made = 0
	id := g.fake.CreateSharedDrive("Sales", StorageAccount)
	g.fake.Share(id, user(Personas[1].Email, "organizer"))
	g.fake.Share(id, user(Personas[0].Email, "reader"))
	for g.made < g.budget {
		region := g.fake.CreateFolder(StorageAccount, id, "Region "+g.name())
		g.made++
		g.grow(StorageAccount, region, 3)
	}
	return Library{ID: "lib-sales", Name: "Sales", SharedDriveID: id}
}

// partners is a My Drive tree of which one folder is shared outside.
func (g *generator) partners() Library {
	g.made = 0
	root := g.fake.CreateFolder(StorageAccount, "", "Partners")
	g.fake.Share(root, user(Personas[0].Email, "fileOrganizer"))
	exchange := g.fake.CreateFolder(StorageAccount, root, "Partner exchange")
	g.fake.Share(exchange, user(Personas[3].Email, "commenter"))
	g.grow(StorageAccount, exchange, 2)
	for g.made < g.budget/2 {
		g.grow(StorageAccount, g.fake.CreateFolder(StorageAccount, root, "Contracts "+g.name()), 2)
	}
	return Library{ID: "lib-partners", Name: "Partners", RootFolderID: root}
}

// grow adds a random subtree under parent, depth levels deep.
func (g *generator) grow(owner, parent string, depth int) {
	if depth == 0 {
		return
	}
	for range 2 + g.rng.IntN(4) {
		if g.made >= g.budget {
			return
		}
		child := g.fake.CreateFolder(owner, parent, g.name())
		g.made++
		g.grow(owner, child, depth-1)
	}
}

var words = strings.Fields(`alpha budget contracts design drafts archive invoices minutes
	roadmap research reports specs templates review planning launch metrics onboarding legal
	marketing assets photos quotes travel hiring training security audit notes ideas backlog`)

func (g *generator) name() string {
	w := words[g.rng.IntN(len(words))]
	return strings.ToUpper(w[:1]) + w[1:] + fmt.Sprintf(" %d", 2020+g.rng.IntN(7))
}
