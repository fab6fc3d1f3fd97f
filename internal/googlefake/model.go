package googlefake

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

const (
	folderMimeType = "application/vnd.google-apps.folder"
	idAlphabet     = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
)

// Permission is a Drive permission as the test helpers take it.
type Permission struct {
	Type               string // "user", "group", "domain", "anyone"
	Role               string // "owner", "organizer", "fileOrganizer", "writer", "commenter", "reader"
	EmailAddress       string // user/group
	Domain             string // domain
	DisplayName        string
	AllowFileDiscovery bool // domain/anyone: false = "anyone with the link"
	// hideEmail: Drive lists this permission without its e-mail address.
	hideEmail bool
	// deleted: the user's account was deleted (RemoveUser); Drive lists the
	// permission with deleted true, and it grants nothing.
	deleted bool
}

// File is a file or folder record of the fake; Modify hands a pointer to it.
// A shared drive's root folder is a File too, with ID and DriveID equal to
// the drive ID, as is each user's My Drive root.
type File struct {
	ID, Name, MimeType           string
	Parents                      []string
	DriveID                      string // shared drive, "" for My Drive
	Owner                        string // My Drive owner e-mail
	ExplicitlyTrashed            bool
	ResourceKey                  string
	AppProperties                map[string]string
	CopyRequiresWriterPermission bool
	DownloadRestrictedForReaders bool // downloadRestrictions.itemDownloadRestriction.restrictedForReaders
	WritersCanShare              bool // default true for new files

	// root first, beside the booleans above: a File of a million stays
	// within 192 bytes.
	root  bool         // a My Drive root or a shared drive's root folder
	seq   int64        // creation order: ties of times go by it
	times [2]int64     // createdTime, modifiedTime (by timeField), in milliseconds
	perms []directPerm // permissions set on this file itself, owner excepted
}

// directPerm is a permission set on a file, with its ID.
type directPerm struct {
	id string
	p  Permission
}

// AddUser adds a Google user, lists it in its domain's directory and creates
// its My Drive root folder. Adding a user twice is harmless. E-mails are
// case-insensitive.
func (s *Server) AddUser(email string) {
	email = strings.ToLower(email)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[email]; ok {
		return
	}
	root := &File{ID: s.newRootID(), Name: "My Drive", MimeType: folderMimeType,
		Owner: email, WritersCanShare: true, root: true}
	s.insert(root)
	s.users[email] = root.ID
	s.people[email] = &person{created: time.Now().UTC()}
}

// RootOf returns the ID of the user's My Drive root folder. It panics for an
// unknown user.
func (s *Server) RootOf(email string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rootOf(strings.ToLower(email))
}

func (s *Server) rootOf(email string) string {
	id, ok := s.users[email]
	if !ok {
		panic(fmt.Sprintf("googlefake: unknown user %q", email))
	}
	return id
}

// AddGroup adds a Google group, or members to an existing one. Members are
// user or group e-mails, of any domain; nested groups count, transitively,
// for Drive access. The Directory API lists the group in the domain of its
// e-mail, with its direct members.
func (s *Server) AddGroup(email string, members ...string) {
	email = strings.ToLower(email)
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.groups[email]
	for _, m := range members {
		if m = strings.ToLower(m); !slices.Contains(list, m) {
			list = append(list, m)
		}
	}
	s.groups[email] = list
}

// CreateFolder creates a folder and returns its ID. parentID "" means the
// owner's My Drive root. parentID may be a shared drive ID or a folder in a
// shared drive: the folder then belongs to that drive and has no owner.
func (s *Server) CreateFolder(owner, parentID, name string) string {
	return s.CreateFile(owner, parentID, name, folderMimeType)
}

// CreateFile creates a file of any MIME type (a folder, a shortcut
// "application/vnd.google-apps.shortcut", "application/pdf", ...) and returns
// its ID. Parents work as for CreateFolder.
func (s *Server) CreateFile(owner, parentID, name, mimeType string) string {
	owner = strings.ToLower(owner)
	s.mu.Lock()
	defer s.mu.Unlock()
	if parentID == "" {
		parentID = s.rootOf(owner)
	}
	parent := s.mustFile(parentID)
	f := &File{ID: s.newFileID(), Name: name, MimeType: mimeType, Parents: []string{parentID},
		DriveID: parent.DriveID, WritersCanShare: true}
	if f.DriveID == "" {
		if owner == "" {
			panic("googlefake: a My Drive file needs an owner")
		}
		f.Owner = owner
	}
	s.insert(f)
	s.record(f, snapshot{})
	return f.ID
}

// insert adds a new file to the store, created now.
func (s *Server) insert(f *File) {
	s.fileSeq++
	f.seq = s.fileSeq
	now := s.now()
	f.times = [2]int64{now, now}
	s.files[f.ID] = f
	s.byCreated.add(f)
	s.byModified.add(f)
	s.link(f.ID, nil, f.Parents)
}

// link updates the children index after a file's parents changed.
func (s *Server) link(id string, oldParents, newParents []string) {
	for _, p := range oldParents {
		delete(s.children[p], id)
	}
	for _, p := range newParents {
		if s.children[p] == nil {
			s.children[p] = map[string]bool{}
		}
		s.children[p][id] = true
	}
}

// mustFile returns a file or panics: the helpers take only known IDs.
func (s *Server) mustFile(id string) *File {
	f := s.files[id]
	if f == nil {
		panic(fmt.Sprintf("googlefake: unknown file %q", id))
	}
	return f
}

// subtree returns f and all its descendants, each once, parents before
// children, siblings in creation order.
func (s *Server) subtree(f *File) []*File {
	out := []*File{f}
	seen := map[string]bool{f.ID: true}
	for i := 0; i < len(out); i++ {
		var kids []*File
		for id := range s.children[out[i].ID] {
			if !seen[id] {
				seen[id] = true
				kids = append(kids, s.files[id])
			}
		}
		slices.SortFunc(kids, func(a, b *File) int { return cmp.Compare(a.seq, b.seq) })
		out = append(out, kids...)
	}
	return out
}

// newFileID returns an unused ID shaped like Drive's file IDs.
func (s *Server) newFileID() string {
	for {
		id := "1" + s.randomString(idAlphabet, 32)
		if s.files[id] == nil {
			return id
		}
	}
}

// newRootID returns an unused ID shaped like a shared drive or My Drive root ID.
func (s *Server) newRootID() string {
	for {
		id := "0A" + s.randomString(idAlphabet[:62], 10) + "Uk9PVA"
		if s.files[id] == nil {
			return id
		}
	}
}

// normalize lower-cases the e-mail and domain of a permission and checks it.
func normalize(p Permission) Permission {
	p.EmailAddress = strings.ToLower(p.EmailAddress)
	p.Domain = strings.ToLower(p.Domain)
	if roleRank[p.Role] == 0 {
		panic(fmt.Sprintf("googlefake: unknown role %q", p.Role))
	}
	switch p.Type {
	case "user", "group":
		if p.EmailAddress == "" {
			panic("googlefake: a " + p.Type + " permission needs an e-mail address")
		}
		p.Domain, p.AllowFileDiscovery = "", false
	case "domain":
		if p.Domain == "" {
			panic("googlefake: a domain permission needs a domain")
		}
		p.EmailAddress = ""
	case "anyone":
		p.EmailAddress, p.Domain = "", ""
	default:
		panic(fmt.Sprintf("googlefake: unknown permission type %q", p.Type))
	}
	return p
}
