package postgres

import (
	"encoding/json"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// storedDirectory is a directory snapshot as the directories table keeps
// it, in JSON. Users and IDs are two maps so that every version reads every
// other's: a snapshot stored by a foldermirror that did not keep IDs has
// none (its users' Google tokens are refused until the next directory sync),
// and one that does not know IDs ignores them.
type storedDirectory struct {
	Domain string
	// Users maps each user's e-mail to whether it is suspended.
	Users map[string]bool
	// IDs maps each user's e-mail to its directory ID.
	IDs          map[string]string `json:",omitempty"`
	DirectGroups map[string][]string
	Unreadable   []string
	SyncedAt     time.Time
}

// encodeDirectory returns the stored form of a snapshot.
func encodeDirectory(snap *fm.DirectorySnapshot) ([]byte, error) {
	s := storedDirectory{Domain: snap.Domain, Users: make(map[string]bool, len(snap.Users)),
		IDs: make(map[string]string, len(snap.Users)), DirectGroups: snap.DirectGroups,
		Unreadable: snap.Unreadable, SyncedAt: snap.SyncedAt}
	for email, u := range snap.Users {
		s.Users[email] = u.Suspended
		if u.ID != "" {
			s.IDs[email] = u.ID
		}
	}
	return json.Marshal(&s)
}

// decodeDirectory reads a snapshot's stored form.
func decodeDirectory(data []byte) (*fm.DirectorySnapshot, error) {
	var s storedDirectory
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	snap := &fm.DirectorySnapshot{Domain: s.Domain, Users: make(map[string]fm.DirectoryUser, len(s.Users)),
		DirectGroups: s.DirectGroups, Unreadable: s.Unreadable, SyncedAt: s.SyncedAt}
	for email, suspended := range s.Users {
		snap.Users[email] = fm.DirectoryUser{ID: s.IDs[email], Suspended: suspended}
	}
	return snap, nil
}
