package syncer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	fm "github.com/foldermirror/foldermirror"
	"golang.org/x/sync/errgroup"
	drive "google.golang.org/api/drive/v3"
	"google.golang.org/api/googleapi"
)

const (
	// parentsPerQuery bounds the "'id' in parents" terms of one listing of
	// a moved-in subtree.
	parentsPerQuery = 100
	// maxDepth bounds walks up a tree, against cycles in Drive data.
	maxDepth = 10_000
)

// plan is what a batch of changes does to the library: folders to write
// (each with its parent in the library) and folders leaving it, with their
// subtrees. It is made reading Drive and the index, and applied in one
// transaction.
type plan struct {
	*reader
	index Index
	root  string

	staged  map[string]*node
	order   []*node // staged folders, in the order met
	removed map[string]bool
	moveIns []string // staged folders new to the library: their subtrees come too
	// driveChanged is a shared drive's new self (name, restrictions).
	driveChanged *drive.Drive

	// What apply does (see inherit.go). made: the staged folders that only
	// inherit, whose list it made from their parent's. ask: the folders
	// whose list only Drive can tell. carried: how many folders it wrote
	// although Drive sent no change for them.
	made    map[string]bool
	ask     []string
	carried int
	// outside: a folder that never was in the library changed (it may be
	// an ancestor of a My Drive library's root). rootReread: the root was
	// read again for that reason.
	outside, rootReread bool
	// indexed are the folders read from the index, as it was before the
	// sync, by ID (nil: not there): a plan reads each once, although
	// changes of siblings walk up through the same ancestors. revision is
	// the library's when the sync began, before the plan read any.
	indexed  map[string]*fm.Folder
	revision uint64
	// above are the folders whose parents readAhead has yet to read, for
	// the walks up that need them (readUp).
	above []string
	// childless are folders the index has no children of, among those a
	// change may take from their place (nil: the index cannot tell at once,
	// fm.ParentsReader). While every folder that leaves its place in the
	// index (staged under another parent, or removed) is one of them, no
	// folder of the index is under a folder that leaves: each still
	// reaches the root by its path in the index, and a walk up may stop at
	// the first one it meets (inLibrary). walkUp: a folder left its place
	// that is not known childless; walks go up to the root.
	childless map[string]bool
	walkUp    bool
}

// shortWalks tells whether a walk up may stop at the first folder of the
// index that stays in its place (see childless).
func (p *plan) shortWalks() bool { return p.childless != nil && !p.walkUp }

// leaves notes that a folder leaves its place in the index, if it has
// one: walks then go up to the root unless it is known childless.
func (p *plan) leaves(id string) {
	if f, read := p.indexed[id]; read && f == nil {
		return // none such in the index: no folder of it is under it
	}
	if !p.childless[id] {
		p.walkUp = true
	}
}

// inIndex returns a folder as the index had it before the sync; ENOTFOUND
// if it had none such.
func (p *plan) inIndex(ctx context.Context, id string) (*fm.Folder, error) {
	f, ok := p.indexed[id]
	if !ok {
		var err error
		f, err = p.index.Folder(ctx, p.lib.ID, id)
		if err != nil && fm.ErrorCode(err) != fm.ENOTFOUND {
			return nil, err
		}
		p.indexed[id] = f
	}
	if f == nil {
		return nil, fm.Errorf(fm.ENOTFOUND, "Folder %s not found.", id)
	}
	return f, nil
}

// make builds the plan from the changes.
func (p *plan) make(ctx context.Context, changes []*drive.Change) error {
	if err := p.readAhead(ctx, changes); err != nil {
		return err
	}
	var pending []*drive.File
	for _, c := range latestPerFile(changes) {
		switch {
		case c.ChangeType == "drive":
			if !p.ownDrive(c) {
				continue // another drive's: no folder of this library
			}
			if err := p.stageDriveRoot(ctx, c.Drive); err != nil {
				return err
			}
		case c.FileId == p.root:
			if err := p.stageRoot(c); err != nil {
				return err
			}
		case c.Removed || c.File == nil:
			if err := p.noteOutside(ctx, c.FileId); err != nil {
				return err
			}
			p.remove(c.FileId)
		case c.File.Trashed || c.File.MimeType != folderMimeType:
			p.remove(c.FileId)
		default:
			pending = append(pending, c.File)
		}
	}
	// A folder can be placed once its parent is: place until nothing moves.
	for progress := true; progress && len(pending) > 0; {
		progress = false
		var rest []*drive.File
		for _, f := range pending {
			placed, err := p.place(ctx, f)
			if err != nil {
				return err
			}
			if placed {
				progress = true
			} else {
				rest = append(rest, f)
			}
		}
		pending = rest
	}
	for _, f := range pending { // outside the library now
		if err := p.noteOutside(ctx, f.Id); err != nil {
			return err
		}
		p.remove(f.Id)
	}
	if err := p.rereadRoot(ctx); err != nil {
		return err
	}
	if err := p.dropStrays(ctx); err != nil {
		return err
	}
	return p.fetchSubtrees(ctx)
}

// readAhead reads in advance, when the index can read many folders at once
// (fm.FoldersReader), the folders that placing the changes would otherwise
// read one at a time: the changed folders (trashed or removed ones too)
// and the parents of those that stay; then, unless the index tells that
// none of the folders a change may take from their place has children
// (see childless), the parents of those, level by level (readUp).
func (p *plan) readAhead(ctx context.Context, changes []*drive.Change) error {
	fr, ok := p.index.(fm.FoldersReader)
	if !ok {
		return nil
	}
	var ids []string
	for _, c := range changes {
		switch {
		case c.ChangeType == "drive":
		case c.Removed || c.File == nil || c.File.Trashed && c.File.MimeType == folderMimeType:
			ids = append(ids, c.FileId)
		case c.File.MimeType != folderMimeType: // not read: probed (probeChildless)
		default:
			ids = append(ids, c.FileId)
			ids = append(ids, c.File.Parents...)
		}
	}
	var err error
	if p.above, err = p.readLevel(ctx, fr, ids); err != nil {
		return err
	}
	if err := p.probeChildless(ctx, changes); err != nil {
		return err
	}
	if p.shortWalks() {
		return nil
	}
	return p.readUp(ctx)
}

// readLevel reads the folders ids that were not read, and returns their
// parents.
func (p *plan) readLevel(ctx context.Context, fr fm.FoldersReader, ids []string) ([]string, error) {
	ids = slices.DeleteFunc(ids, func(id string) bool {
		if _, read := p.indexed[id]; read || id == "" {
			return true
		}
		p.indexed[id] = nil // read below; nil if the index has none such
		return false
	})
	if len(ids) == 0 {
		return nil, nil
	}
	folders, err := fr.Folders(ctx, p.lib.ID, ids)
	if err != nil {
		return nil, err
	}
	parents := make([]string, 0, len(folders))
	for i := range folders {
		p.indexed[folders[i].ID] = &folders[i]
		parents = append(parents, folders[i].ParentID)
	}
	return parents, nil
}

// readUp reads the folders above those read ahead, level by level, up to
// the root.
func (p *plan) readUp(ctx context.Context) error {
	fr, ok := p.index.(fm.FoldersReader)
	for depth := 1; ok && len(p.above) > 0 && depth < maxDepth; depth++ {
		var err error
		if p.above, err = p.readLevel(ctx, fr, p.above); err != nil {
			return err
		}
	}
	p.above = nil
	return nil
}

// probeChildless asks the index, when it can tell at once
// (fm.ParentsReader), which of the files a change may take from their
// place (moved, removed, trashed) have no children: the folders it has,
// and the files not read ahead (not folders, which the plan removes all
// the same).
func (p *plan) probeChildless(ctx context.Context, changes []*drive.Change) error {
	pr, ok := p.index.(fm.ParentsReader)
	if !ok {
		return nil
	}
	var ids []string
	for _, c := range changes {
		if c.ChangeType == "drive" {
			continue
		}
		if f, read := p.indexed[c.FileId]; !read || f != nil && !keepsPlace(c, f) {
			ids = append(ids, c.FileId)
		}
	}
	parents, err := pr.Parents(ctx, p.lib.ID, ids)
	if err != nil {
		return err
	}
	p.childless = make(map[string]bool, len(ids))
	for _, id := range ids {
		p.childless[id] = true
	}
	for _, id := range parents {
		delete(p.childless, id)
	}
	return nil
}

// countOf counts id in ids.
func countOf(ids []string, id string) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

// keepsPlace tells whether a change leaves a folder of the index, f, under
// the parent it has there: a folder, not trashed, whose one parent is that
// one.
func keepsPlace(c *drive.Change, f *fm.Folder) bool {
	if c.Removed || c.File == nil || c.File.Trashed || c.File.MimeType != folderMimeType {
		return false
	}
	ps := c.File.Parents
	switch len(ps) - countOf(ps, c.FileId) {
	case 0:
		return f.ParentID == ""
	case 1:
		return slices.Contains(ps, f.ParentID) && f.ParentID != c.FileId
	}
	return false
}

// noteOutside notes a change of a folder that never was in a My Drive
// library (or of an item that went out of sight): it may be an ancestor of
// the root, whose list the root inherits.
func (p *plan) noteOutside(ctx context.Context, id string) error {
	if p.lib.IsSharedDrive() || p.outside {
		return nil
	}
	_, err := p.inIndex(ctx, id)
	if fm.ErrorCode(err) == fm.ENOTFOUND {
		p.outside = true
		return nil
	}
	return err
}

// rereadRoot reads the root of a My Drive library again when a folder
// outside it changed, unless Drive sent the root: Drive need not send it
// when an ancestor's permissions change.
func (p *plan) rereadRoot(ctx context.Context) error {
	if _, staged := p.staged[p.root]; staged || !p.outside {
		return nil
	}
	f, err := p.svc.Files.Get(p.root).Fields(googleapi.Field(fileFields)).SupportsAllDrives(true).Context(ctx).Do()
	if err != nil {
		return fmt.Errorf("read root folder %s: %w", p.root, err)
	}
	p.rootReread = true
	return p.stageRoot(&drive.Change{FileId: p.root, File: f})
}

// dropStrays removes staged folders that a later change took out of the
// library (an ancestor moved out or trashed after they were placed).
func (p *plan) dropStrays(ctx context.Context) error {
	for changed := true; changed; {
		changed = false
		for _, n := range slices.Clone(p.order) {
			if n.ParentID == "" {
				continue // the root
			}
			_, in, err := p.inLibrary(ctx, n.ParentID, false)
			if err != nil {
				return err
			}
			if !in {
				p.remove(n.ID)
				changed = true
			}
		}
	}
	// Listing from the topmost new folders reaches the others.
	isNew := map[string]bool{}
	for _, id := range p.moveIns {
		isNew[id] = true
	}
	p.moveIns = slices.DeleteFunc(p.moveIns, func(id string) bool {
		n := p.staged[id]
		return n == nil || isNew[n.ParentID]
	})
	return nil
}

// latestPerFile keeps the last change of each file (or shared drive), in
// the order those last changes came.
func latestPerFile(changes []*drive.Change) []*drive.Change {
	last := map[string]int{}
	for i, c := range changes {
		last[changeKey(c)] = i
	}
	out := make([]*drive.Change, 0, len(last))
	for i, c := range changes {
		if last[changeKey(c)] == i {
			out = append(out, c)
		}
	}
	return out
}

func changeKey(c *drive.Change) string {
	if c.ChangeType == "drive" {
		return "drive:" + c.DriveId
	}
	return c.FileId
}

func (p *plan) stage(n *node) {
	if f := p.indexed[n.ID]; n.ID != p.root && (f == nil || f.ParentID != n.ParentID) {
		p.leaves(n.ID) // the root stays where it is, whether read or not
	}
	if _, ok := p.staged[n.ID]; !ok {
		p.order = append(p.order, n)
	} else {
		for i, o := range p.order {
			if o.ID == n.ID {
				p.order[i] = n
			}
		}
	}
	p.staged[n.ID] = n
	delete(p.removed, n.ID)
}

func (p *plan) remove(id string) {
	p.leaves(id)
	if _, ok := p.staged[id]; ok {
		delete(p.staged, id)
		p.order = deleteNode(p.order, id)
	}
	p.removed[id] = true
}

func deleteNode(nodes []*node, id string) []*node {
	out := nodes[:0]
	for _, n := range nodes {
		if n.ID != id {
			out = append(out, n)
		}
	}
	return out
}

func (p *plan) stageRoot(c *drive.Change) error {
	if c.Removed || c.File == nil || c.File.Trashed {
		return fmt.Errorf("the library's root folder %s was removed or trashed", p.root)
	}
	n := p.newNode(c.File)
	n.ParentID = ""
	n.inherits = false
	p.stage(n)
	return nil
}

// ownDrive tells whether a "drive" change is of the library's own shared
// drive. A library holds only the folders under its own root: the changes
// of a storage account's other drives (Drive's feed of a user carries those
// of every drive the user is a member of, joined or left) concern another
// library, or none, and never a My Drive library.
func (p *plan) ownDrive(c *drive.Change) bool {
	id := c.DriveId
	if id == "" && c.Drive != nil {
		id = c.Drive.Id
	}
	return p.lib.IsSharedDrive() && id == p.lib.SharedDriveID
}

// stageDriveRoot stages a shared drive's root after a change to the drive
// (its name, restrictions or members): read again, permissions included.
func (p *plan) stageDriveRoot(ctx context.Context, d *drive.Drive) error {
	if d == nil || d.Restrictions == nil {
		var err error
		if d, err = p.svc.Drives.Get(p.root).Fields(driveFields).Context(ctx).Do(); err != nil {
			return fmt.Errorf("read shared drive %s: %w", p.root, err)
		}
	}
	p.driveChanged = d
	p.stage(sharedDriveRoot(d))
	return nil
}

// place stages a changed folder under its parent in the library nearest the
// root (the first listed among equals), if it has one; a folder new to the
// library brings its subtree.
func (p *plan) place(ctx context.Context, f *drive.File) (bool, error) {
	best, bestDepth, candidates := "", 0, 0
	// With several parents, which is nearest the root tells.
	exact := len(f.Parents)-countOf(f.Parents, f.Id) > 1
	for _, parent := range f.Parents {
		if parent == f.Id {
			continue
		}
		depth, in, err := p.inLibrary(ctx, parent, exact)
		if err != nil {
			return false, err
		}
		if in {
			candidates++
			if best == "" || depth < bestDepth {
				best, bestDepth = parent, depth
			}
		}
	}
	if best == "" {
		return false, nil
	}
	p.odd.parentLinks.Add(int64(candidates - 1))
	_, err := p.inIndex(ctx, f.Id)
	indexed := err == nil
	if err != nil && fm.ErrorCode(err) != fm.ENOTFOUND {
		return false, err
	}
	n := p.newNode(f)
	n.ParentID = best
	p.stage(n)
	if !indexed {
		p.moveIns = append(p.moveIns, f.Id)
	}
	return true, nil
}

// inLibrary tells whether a folder is in the library once the plan is
// applied (its parents, staged or indexed, lead to the root without passing
// a folder that leaves), and how deep: exactly when asked, else at least
// so deep (a walk up may stop at a folder of the index, see childless).
func (p *plan) inLibrary(ctx context.Context, id string, exact bool) (int, bool, error) {
	short := !exact && p.shortWalks()
	if !short {
		if err := p.readUp(ctx); err != nil {
			return 0, false, err
		}
	}
	for depth := range maxDepth {
		if id == p.root {
			return depth, true, nil
		}
		if p.removed[id] {
			return 0, false, nil
		}
		parent := ""
		if n, ok := p.staged[id]; ok {
			parent = n.ParentID
		} else {
			f, err := p.inIndex(ctx, id)
			if fm.ErrorCode(err) == fm.ENOTFOUND {
				return 0, false, nil
			} else if err != nil {
				return 0, false, err
			}
			if short {
				return depth, true, nil // its path in the index stands
			}
			parent = f.ParentID
		}
		if parent == "" {
			return 0, false, nil
		}
		id = parent
	}
	return 0, false, nil
}

// fetchSubtrees lists the folders under the folders new to the library,
// level by level, many parents a query, storage.concurrency queries at once.
func (p *plan) fetchSubtrees(ctx context.Context) error {
	seen := map[string]bool{}
	for frontier := p.moveIns; len(frontier) > 0; {
		children, err := p.listLevel(ctx, frontier)
		if err != nil {
			return err
		}
		var next []string
		for _, c := range children {
			// The listing is as fresh as the changes: what it finds under
			// a folder of the library is in it, whatever an unplaced change
			// of that folder said.
			if seen[c.Id] {
				continue
			}
			seen[c.Id] = true
			if _, ok := p.staged[c.Id]; !ok {
				n := p.newNode(c)
				n.ParentID = firstStaged(c.Parents, p.staged)
				p.stage(n)
			}
			next = append(next, c.Id)
		}
		frontier = next
	}
	return nil
}

// listLevel lists the children of parents, in batches of parentsPerQuery.
func (p *plan) listLevel(ctx context.Context, parents []string) ([]*drive.File, error) {
	batches := make([][]*drive.File, (len(parents)+parentsPerQuery-1)/parentsPerQuery)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, p.concurrency))
	for i := range batches {
		batch := parents[i*parentsPerQuery : min((i+1)*parentsPerQuery, len(parents))]
		g.Go(func() error {
			var err error
			batches[i], err = p.listChildren(ctx, batch)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.Concat(batches...), nil
}

func firstStaged(parents []string, staged map[string]*node) string {
	for _, id := range parents {
		if _, ok := staged[id]; ok {
			return id
		}
	}
	return ""
}

// queryQuoter escapes a value for a Drive query's single-quoted string.
var queryQuoter = strings.NewReplacer(`\`, `\\`, `'`, `\'`)

// listChildren lists the folders (not trashed) with any of parents.
func (p *plan) listChildren(ctx context.Context, parents []string) ([]*drive.File, error) {
	terms := make([]string, len(parents))
	for i, id := range parents {
		terms[i] = "'" + queryQuoter.Replace(id) + "' in parents"
	}
	var out []*drive.File
	call := p.listCall("(" + strings.Join(terms, " or ") + ") and " + foldersQuery)
	err := p.pages(ctx, call, false, func(list *drive.FileList) error {
		out = append(out, folders(list.Files)...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list folders moved into the library: %w", err)
	}
	return out, nil
}
