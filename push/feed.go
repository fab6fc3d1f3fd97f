package push

import (
	"cmp"
	"slices"
	"strings"

	fm "github.com/foldermirror/foldermirror"
)

// Feed is a change feed the service follows: the change log whose
// changes.list the incremental syncs of its libraries read, and which one
// push channel watches.
type Feed struct {
	// Key names the feed: "user:EMAIL" for a storage account's own change
	// log (its My Drive libraries), "drive:ID" for a shared drive's.
	Key string
	// User is the storage account the feed is read, and watched, as.
	User string
	// DriveID is the shared drive of a "drive:" feed, "" for a user's.
	DriveID string
	// Libraries are the IDs of the libraries whose syncs read the feed,
	// sorted.
	Libraries []string
}

// Feeds returns the feeds of libs, sorted by Key: a storage account's My
// Drive libraries share its user feed ("user:EMAIL", User the storage
// account); each shared-drive library has its drive's feed ("drive:ID",
// User its storage account). Two libraries of one shared drive share its
// feed, watched as the storage account of the first of them by ID.
func Feeds(libs []fm.Library) []Feed {
	libs = slices.SortedFunc(slices.Values(libs), func(a, b fm.Library) int { return cmp.Compare(a.ID, b.ID) })
	byKey := map[string]*Feed{}
	var out []*Feed
	for _, l := range libs {
		f := Feed{User: strings.ToLower(l.StorageAccount)}
		if l.IsSharedDrive() {
			f.Key, f.DriveID = "drive:"+l.SharedDriveID, l.SharedDriveID
		} else {
			f.Key = "user:" + f.User
		}
		if byKey[f.Key] == nil {
			byKey[f.Key] = &f
			out = append(out, &f)
		}
		byKey[f.Key].Libraries = append(byKey[f.Key].Libraries, l.ID)
	}
	slices.SortFunc(out, func(a, b *Feed) int { return cmp.Compare(a.Key, b.Key) })
	var feeds []Feed
	for _, f := range out {
		feeds = append(feeds, *f)
	}
	return feeds
}

// feedOfKey returns the feed a key names, as far as the key tells: a
// "drive:" key names no user, and user is taken for it.
func feedOfKey(key, user string) Feed {
	if id, ok := strings.CutPrefix(key, "drive:"); ok {
		return Feed{Key: key, User: user, DriveID: id}
	}
	return Feed{Key: key, User: strings.TrimPrefix(key, "user:")}
}
