package googlefake

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/api/drive/v3"
)

// sharedDrive is a shared drive: its resource, as drives.get answers it,
// and what the fake keeps beside it. Its root folder is the File of the
// same ID.
type sharedDrive struct {
	res  *drive.Drive
	root *File
	// customer is the organisation the drive belongs to: its creator's.
	customer string
	// hiddenBy holds the users who hid the drive (HideDrive).
	hiddenBy map[string]bool
}

// driveIndex finds shared drives by who may list them, so that drives.list
// reads a page, not every drive: by the principal key of each effective
// permission on a drive's root (a member: a user, a group, a domain), and
// by "customer:ID" for the organisation it belongs to. Each list is in
// creation order.
type driveIndex struct {
	by   map[string][]*File  // key → drive roots, by seq
	keys map[string][]string // drive ID → the keys it is listed under
}

func newDriveIndex() driveIndex {
	return driveIndex{by: map[string][]*File{}, keys: map[string][]string{}}
}

// CreateSharedDrive creates a shared drive whose only member is organizer,
// with role organizer, and returns its ID, which is also the ID of the
// drive's root folder. The drive belongs to the organisation of the
// organizer's domain (see AddOrganization), whose admins list it with
// useDomainAdminAccess.
func (s *Server) CreateSharedDrive(name, organizer string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.newRootID()
	root := &File{ID: id, Name: name, MimeType: folderMimeType, DriveID: id, root: true}
	p := normalize(Permission{Type: "user", Role: "organizer", EmailAddress: organizer})
	root.perms = []directPerm{{id: permissionID(p), p: p}}
	s.insert(root)
	s.drives[id] = &sharedDrive{root: root, customer: s.customerOf(domainOf(p.EmailAddress)),
		res: &drive.Drive{Id: id, Name: name, Kind: "drive#drive",
			CreatedTime: formatMillis(root.times[createdTime]), Restrictions: &drive.DriveRestrictions{}}}
	s.indexDrive(root)
	s.record(root, snapshot{})
	return id
}

// HideDrive hides a shared drive from a member's default view, or shows it
// again (drives.hide, drives.unhide): a preference of that member alone.
// drives.list, drives.get and the drive's changes tell that member the
// drive is hidden; nothing changes for the other members, and no change
// is logged (Drive documents none for it). The preference outlives the
// membership. It panics for an unknown drive or a user who is not a
// member of it.
func (s *Server) HideDrive(driveID, user string, hidden bool) {
	user = strings.ToLower(user)
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.mustDrive(driveID)
	if !s.viewer(user).canAccess(s.state(d.root)) {
		panic(fmt.Sprintf("googlefake: %s is not a member of shared drive %q", user, driveID))
	}
	if !hidden {
		delete(d.hiddenBy, user)
		return
	}
	if d.hiddenBy == nil {
		d.hiddenBy = map[string]bool{}
	}
	d.hiddenBy[user] = true
}

// DeleteSharedDrive deletes a shared drive and everything in it, as an
// organizer or admin deleting it with its items does: each member's user
// change log reports the drive removed (a "drive" change, removed true),
// and with every shared drive's items, its items removed; drives.get and
// the drive's change log answer 404 from then on. It panics for an unknown
// drive.
func (s *Server) DeleteSharedDrive(driveID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteTree(s.mustDrive(driveID).root)
}

// ModifyDrive applies fn to a shared drive (name, restrictions, ...) and
// records a "drive" change, which reaches each member's user change log.
// fn must not change the ID; a drive's hidden state is each member's own
// (HideDrive), and fn cannot set it.
func (s *Server) ModifyDrive(driveID string, fn func(d *drive.Drive)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.mustDrive(driveID)
	s.mutate(driveID, itemOnly, func(root *File) {
		fn(d.res)
		d.res.Id, d.res.Hidden = driveID, false
		root.Name = d.res.Name
	})
}

// mustDrive returns a shared drive or panics.
func (s *Server) mustDrive(id string) *sharedDrive {
	d := s.drives[id]
	if d == nil {
		panic(fmt.Sprintf("googlefake: unknown shared drive %q", id))
	}
	return d
}

// memberDrive returns a shared drive the viewer is a member of.
func (s *Server) memberDrive(v *viewer, id string) (*sharedDrive, *apiError) {
	d := s.drives[id]
	if d == nil || !v.canAccess(s.state(d.root)) {
		return nil, driveNotFound(id)
	}
	return d, nil
}

// drivesGet is drives.get; non-members get "Shared drive not found".
func (s *Server) drivesGet(c *call) (any, *apiError) {
	d, aerr := s.memberDrive(c.v, c.id)
	if aerr != nil {
		return nil, aerr
	}
	return d.json(c.v, c.fields), nil
}

// json renders the fields want selects of the drive as the viewer sees it:
// hidden if the viewer hid it.
func (d *sharedDrive) json(v *viewer, want mask) *drive.Drive {
	return driveJSON(d.res, d.hiddenBy[v.email], want)
}

// drivesList is drives.list: the shared drives the viewer is a member of
// (a permission on the drive's root reaches it: its user, a group of it,
// its domain), hidden ones included, in creation order; with
// useDomainAdminAccess, those of the organisation the viewer administers,
// member or not. Pages hold 10 drives, pageSize up to 100 (more is
// coerced to 100, as Drive does). A page token is the creation place of
// the page's last drive: it stays valid while drives come and go. q, a
// search of drives, is not implemented: it answers 501 rather than a
// listing that ignores it.
func (s *Server) drivesList(c *call) (any, *apiError) {
	keys, aerr := s.driveListKeys(c)
	if aerr != nil {
		return nil, aerr
	}
	size, aerr := intParam(c.q, "pageSize", 10)
	if aerr != nil {
		return nil, aerr
	}
	var after int64
	if tok := c.q.Get("pageToken"); tok != "" {
		at, ok := decodePageToken("drives", tok)
		n, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil || n < 0 {
			return nil, invalidParam("pageToken")
		}
		after = n
	}
	page, more := s.driveIndex.page(keys, after, s.repeatItems, size)
	out := &drive.DriveList{Kind: "drive#driveList", Drives: make([]*drive.Drive, len(page)), ForceSendFields: []string{"Drives"}}
	driveMask, _ := c.fields.child("drives")
	for i, root := range page {
		out.Drives[i] = s.drives[root.ID].json(c.v, driveMask)
	}
	switch {
	case more:
		out.NextPageToken = encodePageToken("drives", strconv.FormatInt(page[len(page)-1].seq, 10))
	case s.loopDrivePages:
		out.NextPageToken = encodePageToken("drives", "0")
	}
	return out, nil
}

// driveListKeys reads q and useDomainAdminAccess and returns the index
// keys of the drives the listing covers.
func (s *Server) driveListKeys(c *call) ([]string, *apiError) {
	if c.q.Get("q") != "" {
		return nil, newAPIError(http.StatusNotImplemented, "notImplemented",
			"googlefake does not implement q for drives.list", "q")
	}
	asAdmin, aerr := boolParam(c.q, "useDomainAdminAccess")
	if aerr != nil {
		return nil, aerr
	}
	if !asAdmin {
		keys := make([]string, 0, len(c.v.principals))
		for k := range c.v.principals {
			keys = append(keys, k)
		}
		return keys, nil
	}
	customer := s.adminCustomer(c.v.email)
	if customer == "" {
		return nil, newAPIError(http.StatusForbidden, "noListTeamDrivesAdministratorPrivilege",
			"The requesting user does not have the administrator privilege required to list or manage all shared drives.", "")
	}
	return []string{customerKey(customer)}, nil
}

// customerKey is the driveIndex key of an organisation's drives.
func customerKey(customer string) string { return "customer:" + customer }

// indexDrive lists a shared drive's root under the keys of the drive's
// members and organisation, and under those only; a deleted drive's root
// is listed nowhere. Every change to a drive's root calls it.
func (s *Server) indexDrive(root *File) {
	var keys []string
	if d := s.drives[root.ID]; d != nil {
		keys = append(keys, customerKey(d.customer))
		for _, g := range s.state(root).grants {
			keys = append(keys, g.key)
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
	}
	x := &s.driveIndex
	old := x.keys[root.ID]
	for _, k := range old {
		if _, found := slices.BinarySearch(keys, k); !found {
			x.remove(k, root)
		}
	}
	for _, k := range keys {
		if _, found := slices.BinarySearch(old, k); !found {
			x.add(k, root)
		}
	}
	if keys == nil {
		delete(x.keys, root.ID)
		return
	}
	x.keys[root.ID] = keys
}

// bySeq orders drive roots by creation.
func bySeq(f *File, seq int64) int { return cmp.Compare(f.seq, seq) }

// add lists a drive root under key.
func (x *driveIndex) add(key string, root *File) {
	list := x.by[key]
	i, _ := slices.BinarySearchFunc(list, root.seq, bySeq)
	x.by[key] = slices.Insert(list, i, root)
}

// remove takes a drive root off the list of key.
func (x *driveIndex) remove(key string, root *File) {
	list := x.by[key]
	if i, found := slices.BinarySearchFunc(list, root.seq, bySeq); found {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(x.by, key)
		return
	}
	x.by[key] = list
}

// page returns the first n drive roots listed under any of keys created
// after the one of creation place after (or from it, if inclusive), in
// creation order, and whether more follow. It reads at most n+1 roots of
// each key's list.
func (x *driveIndex) page(keys []string, after int64, inclusive bool, n int) ([]*File, bool) {
	var out []*File
	for _, k := range keys {
		list := x.by[k]
		i, found := slices.BinarySearchFunc(list, after, bySeq)
		if found && !inclusive {
			i++
		}
		out = append(out, list[i:min(i+n+1, len(list))]...)
	}
	slices.SortFunc(out, func(a, b *File) int { return cmp.Compare(a.seq, b.seq) })
	out = slices.Compact(out)
	if len(out) > n {
		return out[:n], true
	}
	return out, false
}
