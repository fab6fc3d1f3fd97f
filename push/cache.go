package push

import (
	"slices"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// channelCache is the stored channels as this process knows them, by ID
// and by feed, so that what covers a feed is found without looking at
// every channel (a service of 10,000 feeds stores 10,000 channels, twice
// that while it renews them). It is not safe for concurrent use: the
// Service guards it with its mu.
type channelCache struct {
	byID   map[string]fm.PushChannel
	byFeed map[string][]string // channel IDs, by feed key
	// live counts the unexpired channels, as of the install, and of each
	// put and remove since.
	live int
}

func newChannelCache() channelCache {
	return channelCache{byID: map[string]fm.PushChannel{}, byFeed: map[string][]string{}}
}

// install replaces what the cache holds with list, read at now.
func (c *channelCache) install(list []fm.PushChannel, now time.Time) {
	*c = channelCache{byID: make(map[string]fm.PushChannel, len(list)), byFeed: make(map[string][]string, len(list))}
	for _, ch := range list {
		c.put(ch, now)
	}
}

// put caches ch, stored at now, replacing the channel of its ID.
func (c *channelCache) put(ch fm.PushChannel, now time.Time) {
	c.remove(ch.ID, now)
	c.byID[ch.ID] = ch
	c.byFeed[ch.Feed] = append(c.byFeed[ch.Feed], ch.ID)
	if now.Before(ch.Expiration) {
		c.live++
	}
}

// remove drops the channel of that ID, deleted at now, if cached.
func (c *channelCache) remove(id string, now time.Time) {
	ch, ok := c.byID[id]
	if !ok {
		return
	}
	c.unindex(ch)
	delete(c.byID, id)
	if now.Before(ch.Expiration) {
		c.live--
	}
}

// unindex drops ch from its feed's IDs.
func (c *channelCache) unindex(ch fm.PushChannel) {
	ids := slices.DeleteFunc(c.byFeed[ch.Feed], func(id string) bool { return id == ch.ID })
	if len(ids) == 0 {
		delete(c.byFeed, ch.Feed)
		return
	}
	c.byFeed[ch.Feed] = ids
}

// ofFeed returns the channels of the feed keyed key.
func (c *channelCache) ofFeed(key string) []fm.PushChannel {
	ids := c.byFeed[key]
	out := make([]fm.PushChannel, len(ids))
	for i, id := range ids {
		out[i] = c.byID[id]
	}
	return out
}

// latest returns the channel that covers the feed keyed key: the
// unexpired one that expires last, among those Drive registered (the one
// stored before its watch has no resourceId yet).
func (c *channelCache) latest(key string, now time.Time) (fm.PushChannel, bool) {
	return latest(c.ofFeed(key), now)
}

// latest returns the unexpired channel of chans that expires last, among
// those Drive registered.
func latest(chans []fm.PushChannel, now time.Time) (fm.PushChannel, bool) {
	var best fm.PushChannel
	found := false
	for _, ch := range chans {
		if ch.ResourceID != "" && now.Before(ch.Expiration) &&
			(!found || ch.Expiration.After(best.Expiration) || ch.Expiration.Equal(best.Expiration) && ch.ID > best.ID) {
			best, found = ch, true
		}
	}
	return best, found
}
