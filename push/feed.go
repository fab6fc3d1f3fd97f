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
	// Discovery: the feed is the user log of a storage account whose
	// shared drives are discovered (it tells of drives added and removed).
	Discovery bool
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

// feedSet is the feeds of the library set at one time, indexed. It is
// never changed: a change of the set replaces it whole.
type feedSet struct {
	list  []Feed // sorted by Key
	byKey map[string]*Feed
	// byLibrary is the key of each library's feed, by library ID;
	// domains the domains of each feed's libraries, by feed key.
	byLibrary map[string]string
	domains   map[string][]string
}

// newFeedSet returns the feeds of libs, and the user feeds of the storage
// accounts whose drives are discovered, indexed.
func newFeedSet(libs []fm.Library, discoveryAccounts []string) *feedSet {
	fs := &feedSet{list: withDiscovery(Feeds(libs), discoveryAccounts), byKey: map[string]*Feed{}, byLibrary: map[string]string{},
		domains: map[string][]string{}}
	domainOf := make(map[string]string, len(libs))
	for _, l := range libs {
		domainOf[l.ID] = l.Domain
	}
	for i := range fs.list {
		f := &fs.list[i]
		fs.byKey[f.Key] = f
		for _, lib := range f.Libraries {
			fs.byLibrary[lib] = f.Key
			if d := domainOf[lib]; !slices.Contains(fs.domains[f.Key], d) {
				fs.domains[f.Key] = append(fs.domains[f.Key], d)
			}
		}
		slices.Sort(fs.domains[f.Key])
	}
	return fs
}

// withDiscovery returns feeds with the user feed of each account in
// accounts marked Discovery, added if it has no library, sorted by Key.
func withDiscovery(feeds []Feed, accounts []string) []Feed {
	for _, a := range accounts {
		key := "user:" + strings.ToLower(a)
		i, found := slices.BinarySearchFunc(feeds, key, func(f Feed, k string) int { return cmp.Compare(f.Key, k) })
		if !found {
			feeds = slices.Insert(feeds, i, Feed{Key: key, User: strings.ToLower(a)})
		}
		feeds[i].Discovery = true
	}
	return feeds
}

// removedFrom returns the keys of the feeds of fs that next has not.
func (fs *feedSet) removedFrom(next *feedSet) []string {
	var keys []string
	for _, f := range fs.list {
		if next.byKey[f.Key] == nil {
			keys = append(keys, f.Key)
		}
	}
	return keys
}

// sameKeys tells whether fs and other have the same feeds, by key (their
// libraries may differ).
func (fs *feedSet) sameKeys(other *feedSet) bool {
	return len(fs.list) == len(other.list) && len(fs.removedFrom(other)) == 0
}
