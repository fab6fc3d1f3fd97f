package fmtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	fm "github.com/foldermirror/foldermirror"
)

// World returns a My Drive library of n folders (at least 1,002) shaped
// like the bench's world (bench/README.md, "The world", -grants varied),
// without a Drive fake: a root shared with the domain, a group and two
// users; a folder "wide" with 1,000 children, every other re-shared; the
// rest a tree six levels deep, each parent's children together, a share of
// each level (more near the root) shared with one of a pool of 200 users
// and 40 groups. Each folder's list is the union of its ancestors' grants,
// a principal's highest role winning: about 5,000 distinct lists per
// 100,000 folders, 6 permissions a folder on average. IDs are Drive's
// shape (33 characters). The same n gives the same world.
func World(n int) (rootID string, folders []fm.SyncedFolder) {
	w := &worldMaker{rng: rand.New(rand.NewPCG(uint64(n), 10)), lists: map[listStep]int{}, byKey: map[string]int{},
		ids: map[string]bool{}}
	w.folders = make([]fm.SyncedFolder, 0, n)
	owner := fm.Permission{ID: "owner0", Type: "user", Role: "owner", EmailAddress: "storage@world.example", DisplayName: "Storage"}
	root := w.add("", "World library", w.listOf(-1, owner), []fm.Permission{owner})
	for _, p := range worldRootGrants {
		w.share(root, p)
	}
	wide := w.add(w.folders[root].ID, "wide", w.list[root], nil)
	for i := range 1000 {
		c := w.add(w.folders[wide].ID, fmt.Sprintf("Child %04d", i), w.list[wide], nil)
		if i%2 == 0 {
			w.share(c, worldAliceWriter)
		}
	}
	w.grow(root, n-len(w.folders))
	return w.folders[root].ID, w.folders
}

// The grants of World's root, and the one every other child of "wide" has.
var (
	worldRootGrants = []fm.Permission{
		{ID: "domain0", Type: "domain", Role: "reader", Domain: "world.example", DisplayName: "World", AllowFileDiscovery: true},
		{ID: "group0", Type: "group", Role: "reader", EmailAddress: "staff@world.example", DisplayName: "Staff"},
		{ID: "alice0", Type: "user", Role: "reader", EmailAddress: "alice@world.example", DisplayName: "Alice"},
		{ID: "bob0", Type: "user", Role: "reader", EmailAddress: "bob@world.example", DisplayName: "Bob"},
	}
	worldAliceWriter = fm.Permission{ID: "alice0", Type: "user", Role: "writer", EmailAddress: "alice@world.example", DisplayName: "Alice"}
	// worldShare is, by level below the root, the share of folders shared
	// with a principal of the pool; deeper levels take the last.
	worldShare = []float64{0, 0.6, 0.4, 0.25, 0.12, 0.06}
)

// worldDepth is how many levels the tree has below the root.
const worldDepth = 6

// worldMaker builds a World.
type worldMaker struct {
	rng     *rand.Rand
	folders []fm.SyncedFolder
	list    []int // by folder: its list's number
	// lists numbers each list made from another and one grant; byKey each
	// distinct list; perms holds them by number.
	lists map[listStep]int
	byKey map[string]int
	perms [][]fm.Permission
	ids   map[string]bool
}

type listStep struct {
	from  int
	grant string
}

// add adds a folder with list number list and its own permissions.
func (w *worldMaker) add(parent, name string, list int, own []fm.Permission) int {
	id := w.newID()
	f := fm.SyncedFolder{Folder: fm.Folder{ID: id, ParentID: parent, Name: name, WritersCanShare: true},
		Permissions: w.perms[list], OwnPermissions: own}
	w.folders = append(w.folders, f)
	w.list = append(w.list, list)
	return len(w.folders) - 1
}

// idAlphabet is the alphabet of Drive's file IDs.
const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"

// newID returns an ID not given yet, of Drive's shape: "1" and 32
// characters drawn at random.
func (w *worldMaker) newID() string {
	for {
		b := make([]byte, 33)
		b[0] = '1'
		for i := 1; i < len(b); i++ {
			b[i] = idAlphabet[w.rng.IntN(len(idAlphabet))]
		}
		if id := string(b); !w.ids[id] {
			w.ids[id] = true
			return id
		}
	}
}

// share gives folder i the grant p, merged into its list.
func (w *worldMaker) share(i int, p fm.Permission) {
	w.list[i] = w.listOf(w.list[i], p)
	f := &w.folders[i]
	f.Permissions = w.perms[w.list[i]]
	f.OwnPermissions = append(slices.Clip(f.OwnPermissions), p)
}

// listOf returns the number of list from (-1: the empty list) with p
// merged in, its principal's highest role winning; lists are in order of
// principal.
func (w *worldMaker) listOf(from int, p fm.Permission) int {
	who := p.Type + ":" + p.EmailAddress + p.Domain
	step := listStep{from, who + "/" + p.Role}
	if n, ok := w.lists[step]; ok {
		return n
	}
	var list []fm.Permission
	if from >= 0 {
		list = slices.Clone(w.perms[from])
	}
	principal := func(q fm.Permission) string { return q.Type + ":" + q.EmailAddress + q.Domain }
	i, found := slices.BinarySearchFunc(list, who, func(q fm.Permission, who string) int { return strings.Compare(principal(q), who) })
	switch {
	case !found:
		list = slices.Insert(list, i, p)
	case fm.ParseRole(list[i].Role) < fm.ParseRole(p.Role):
		list[i] = p
	}
	key := string(fm.AppendPermissions(nil, list))
	n, ok := w.byKey[key]
	if !ok {
		n = len(w.perms)
		w.perms = append(w.perms, list)
		w.byKey[key] = n
	}
	w.lists[step] = n
	return n
}

// grow adds n folders under root, level by level, each level b times the
// one above (b the least that fits n in worldDepth levels), the last level
// made taking what is left; a parent's children are made together.
func (w *worldMaker) grow(root, n int) {
	b := 2
	for capacity(b) < n {
		b++
	}
	parents := []int{root}
	for level := 1; level <= worldDepth && n > 0; level++ {
		count := min(len(parents)*b, n)
		next := make([]int, 0, count)
		for i := range count {
			p := parents[i*len(parents)/count]
			name := fmt.Sprintf("%s %d-%d", worldWords[(level*7+i)%len(worldWords)], level, i)
			c := w.add(w.folders[p].ID, name, w.list[p], nil)
			if w.rng.Float64() < worldShare[min(level, len(worldShare)-1)] {
				w.share(c, w.poolGrant())
			}
			next = append(next, c)
		}
		n -= count
		parents = next
	}
}

// capacity is how many folders a tree of branching b holds in worldDepth
// levels below its root.
func capacity(b int) int {
	total, level := 0, 1
	for range worldDepth {
		level *= b
		total += level
	}
	return total
}

var worldWords = strings.Fields("Budget Contracts Design Drafts Archive Invoices Minutes Roadmap Research Reports Specs Templates Review Planning")

// poolGrant draws a grant of the pool: a user (most often), a group, or
// one of the root's principals again with a higher role.
func (w *worldMaker) poolGrant() fm.Permission {
	role := []string{"reader", "reader", "reader", "reader", "reader", "commenter", "commenter", "writer", "writer", "writer"}[w.rng.IntN(10)]
	switch r := w.rng.IntN(100); {
	case r < 80:
		i := w.rng.IntN(200)
		return fm.Permission{ID: fmt.Sprintf("u%03d", i), Type: "user", Role: role,
			EmailAddress: fmt.Sprintf("user%03d@world.example", i), DisplayName: fmt.Sprintf("User %03d", i)}
	case r < 95:
		g := w.rng.IntN(40)
		return fm.Permission{ID: fmt.Sprintf("g%02d", g), Type: "group", Role: role,
			EmailAddress: fmt.Sprintf("team%02d@world.example", g), DisplayName: fmt.Sprintf("Team %02d", g)}
	default:
		p := worldRootGrants[1+w.rng.IntN(len(worldRootGrants)-1)]
		p.Role = []string{"commenter", "writer"}[w.rng.IntN(2)]
		return p
	}
}
