package googlefake

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/api/drive/v3"
)

// Method names counted by Calls, for push notifications.
const (
	callChangesWatch = "drive.changes.watch"
	callChannelsStop = "drive.channels.stop"
)

// Drive's rules for notification channels (Drive API guide, "Notifications
// for resource changes"): a channel on the changes resource lives at most a
// week, an hour when the watch asks for no expiration; its ID is at most 64
// characters.
const (
	maxChangesChannelTTL = 7 * 24 * time.Hour
	defaultChannelTTL    = time.Hour
	maxChannelIDLength   = 64
	// maxChannelBody bounds the request bodies of changes.watch and
	// channels.stop.
	maxChannelBody = 64 << 10
)

// channelIDPattern is what Drive accepts as a channel ID.
var channelIDPattern = regexp.MustCompile(`^[A-Za-z0-9\-_+/=]+$`)

// changesWatchEndpoint names changes.watch and checks its fields parameter
// against the Channel it answers with.
var changesWatchEndpoint = &endpoint{name: callChangesWatch, result: reflect.TypeFor[drive.Channel](), scopeOK: isDriveScope}

// pushState is the push notification side of a Server: its channels and how
// notifications reach them. Fields without a comment are guarded by
// Server.mu.
type pushState struct {
	live      map[string]*channel   // live channels by ID
	made      map[string][]*channel // every channel ever made, by ID
	allowHTTP bool
	refused   map[string]bool // webhook hosts (host:port) refused
	closed    bool            // Close ran: no channel delivers any more
	wg        sync.WaitGroup  // one per delivery goroutine

	// Read by the delivery goroutines without Server.mu.
	client atomic.Pointer[http.Client]
	delay  atomic.Int64 // coalescing delay, in nanoseconds
	drop   atomic.Bool

	// flushMu guards the channels' settled positions; settled is signalled
	// whenever one moves.
	flushMu sync.Mutex
	settled *sync.Cond
}

func newPushState() *pushState {
	p := &pushState{live: map[string]*channel{}, made: map[string][]*channel{}, refused: map[string]bool{}}
	p.settled = sync.NewCond(&p.flushMu)
	p.client.Store(&http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}})
	return p
}

// channel is a notification channel of changes.watch.
type channel struct {
	id, resourceID, resourceURI, token, address string
	expiration                                  time.Time
	// The feed: the user's change log, or with driveID a shared drive's,
	// seen as changes.list with the watch's parameters would show it.
	user, driveID  string
	scope          feedScope
	includeRemoved bool
	inDrive        bool // spaces covers "drive"

	// start is the change log position when the channel was made: changes
	// from there on are notified. cursor is the first position the channel
	// has not yet looked at, guarded by Server.mu.
	start, cursor int64
	// settled is the log position up to which the channel has looked and
	// delivered what it found (-1 before its sync message); guarded by
	// pushState.flushMu.
	settled int64

	kick   chan struct{} // capacity 1: changes were recorded
	ctx    context.Context
	cancel context.CancelFunc

	delivered, failed, dropped atomic.Int64
}

// Deliveries counts the notifications of a channel.
type Deliveries struct {
	// Delivered: answered with a code Drive takes for success (200, 201,
	// 202, 204 or 102).
	Delivered int
	// Failed: answered otherwise or not at all, after the retries Drive
	// makes for 500, 502, 503 and 504.
	Failed int
	// Dropped: not sent, as DropNotifications asked.
	Dropped int
}

func (ch *channel) deliveries() Deliveries {
	return Deliveries{Delivered: int(ch.delivered.Load()), Failed: int(ch.failed.Load()), Dropped: int(ch.dropped.Load())}
}

// PushChannel describes a live notification channel, as PushChannels lists it.
type PushChannel struct {
	ID, ResourceID, ResourceURI, Address, Token string
	Expiration                                  time.Time
	// User is the user whose change log the channel watches; with DriveID
	// set, it watches that shared drive's change log instead, as User sees it.
	User, DriveID string
	Deliveries
}

// AllowHTTPWebhooks makes, when on, changes.watch accept http:// addresses
// on loopback hosts (localhost, 127.0.0.0/8, ::1), where tests receive
// notifications. Off, the default, it refuses every address but https://,
// as Drive does, with 400 push.webhookUrlNotHttps.
func (s *Server) AllowHTTPWebhooks(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.push.allowHTTP = on
}

// RefuseWebhooks makes, when on, changes.watch refuse every address on the
// host and port of address with 401 push.webhookUrlUnauthorized
// ("Unauthorized WebHook callback channel"), Drive's answer for a domain the
// project has not verified. It panics if address is not an absolute URL.
func (s *Server) RefuseWebhooks(address string, on bool) {
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		panic("googlefake: RefuseWebhooks needs an absolute URL, not " + strconv.Quote(address))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.push.refused[strings.ToLower(u.Host)] = true
	} else {
		delete(s.push.refused, strings.ToLower(u.Host))
	}
}

// SetWebhookClient sets the client notifications are posted with: for an
// https:// receiver on an httptest TLS server, its Client(). The default
// trusts the system's roots. Each post is abandoned after webhookTimeout
// whatever the client's own timeout.
func (s *Server) SetWebhookClient(c *http.Client) {
	s.push.client.Store(c)
}

// SetNotificationDelay sets how long a channel waits, once a change reaches
// its feed, before looking at what changed and posting one "change"
// message for all of it, as Google batches notifications: many changes in
// quick succession may give fewer messages, never none after the last one.
// The default is 0: a channel looks at once (changes recorded while it
// posts still come together in its next message).
func (s *Server) SetNotificationDelay(d time.Duration) {
	s.push.delay.Store(int64(max(d, 0)))
}

// DropNotifications makes, when on, every channel drop the messages due
// instead of posting them (each counts as Dropped), as Drive, which does not
// promise delivery, sometimes does. Off, the default, they are posted.
func (s *Server) DropNotifications(on bool) {
	s.push.drop.Store(on)
}

// ExpireChannel makes a live channel expire now: it posts nothing more and
// channels.stop no longer knows it. It reports whether the channel was live.
func (s *Server) ExpireChannel(id string) bool {
	s.mu.Lock()
	ch := s.liveChannel(id)
	if ch != nil {
		delete(s.push.live, id)
	}
	s.mu.Unlock()
	if ch == nil {
		return false
	}
	ch.cancel()
	return true
}

// PushChannels returns the live channels, by ID.
func (s *Server) PushChannels() []PushChannel {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PushChannel
	for _, id := range slices.Sorted(maps.Keys(s.push.live)) {
		if ch := s.liveChannel(id); ch != nil {
			out = append(out, PushChannel{ID: ch.id, ResourceID: ch.resourceID, ResourceURI: ch.resourceURI,
				Address: ch.address, Token: ch.token, Expiration: ch.expiration, User: ch.user, DriveID: ch.driveID,
				Deliveries: ch.deliveries()})
		}
	}
	return out
}

// ChannelDeliveries returns the counts of the channels with that ID, live
// or ended, added up (an ID may be used again once its channel ended).
func (s *Server) ChannelDeliveries(id string) Deliveries {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum Deliveries
	for _, ch := range s.push.made[id] {
		d := ch.deliveries()
		sum.Delivered += d.Delivered
		sum.Failed += d.Failed
		sum.Dropped += d.Dropped
	}
	return sum
}

// FlushNotifications waits until every live channel has sent its sync
// message, looked at every change recorded so far, and posted (or failed
// to post, or dropped) the message those changes call for. A test can then
// assert what was, and what was not, notified. Do not call it from a
// webhook handler: it would wait for itself.
func (s *Server) FlushNotifications() {
	s.mu.Lock()
	target := s.log.next
	chans := slices.Collect(maps.Values(s.push.live))
	s.mu.Unlock()
	p := s.push
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	for _, ch := range chans {
		for ch.settled < target {
			p.settled.Wait()
		}
	}
}

// liveChannel returns the channel with that ID if it has not expired.
func (s *Server) liveChannel(id string) *channel {
	ch := s.push.live[id]
	if ch == nil || !time.Now().Before(ch.expiration) {
		return nil
	}
	return ch
}

// kickChannels tells every live channel that changes were recorded.
func (s *Server) kickChannels() {
	for _, ch := range s.push.live {
		select {
		case ch.kick <- struct{}{}:
		default:
		}
	}
}

// closePush ends every channel and waits for their deliveries to stop.
func (s *Server) closePush() {
	s.mu.Lock()
	s.push.closed = true
	for _, ch := range s.push.live {
		ch.cancel()
	}
	clear(s.push.live)
	s.mu.Unlock()
	s.push.wg.Wait()
	s.push.client.Load().CloseIdleConnections()
}

// channelRequest is the Channel of a changes.watch or channels.stop body.
// Expiration is a number of milliseconds, sent as a JSON string (as the
// client library does) or number (as Drive's guide shows).
type channelRequest struct {
	ID         string      `json:"id"`
	ResourceID string      `json:"resourceId"`
	Type       string      `json:"type"`
	Address    string      `json:"address"`
	Token      string      `json:"token"`
	Expiration json.Number `json:"expiration"`
}

// serveWatch answers changes.watch (POST drive/v3/changes/watch), then
// starts the new channel's deliveries: its sync message may still reach
// the address before the client has read the answer, as with Drive.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request) {
	s.count(callChangesWatch)
	ch, body, aerr := s.servePushCall(w, r, s.watch)
	if aerr != nil {
		writePushError(w, aerr)
		return
	}
	if body == nil {
		return // a fault was injected
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_, _ = w.Write(body)
	if ch != nil {
		go s.deliver(ch)
	}
}

// serveStop answers channels.stop (POST drive/v3/channels/stop): 204 for a
// live channel, which then posts nothing more.
func (s *Server) serveStop(w http.ResponseWriter, r *http.Request) {
	s.count(callChannelsStop)
	_, body, aerr := s.servePushCall(w, r, s.stop)
	switch {
	case aerr != nil:
		writePushError(w, aerr)
	case body != nil:
		w.WriteHeader(http.StatusNoContent)
	}
}

// servePushCall does what changes.watch and channels.stop share: latency,
// faults (which create or stop no channel), the method, the body, and run
// under the lock. It returns a nil body when it answered with a fault.
func (s *Server) servePushCall(w http.ResponseWriter, r *http.Request,
	run func(*http.Request, *channelRequest) (*channel, []byte, *apiError),
) (*channel, []byte, *apiError) {
	beforeWriting := s.pace(r.Context())
	defer beforeWriting()
	if f, ok := s.faults.draw(); ok {
		beforeWriting()
		inject(w, r, f, func() []byte { return []byte(`{"kind":"api#channel"}`) })
		return nil, nil, nil
	}
	if r.Method != http.MethodPost {
		return nil, nil, newAPIError(http.StatusNotFound, "notFound", "Not Found", "")
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxChannelBody))
	var req channelRequest
	if err != nil || json.Unmarshal(raw, &req) != nil {
		return nil, nil, newAPIError(http.StatusBadRequest, "parseError", "Parse Error", "")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return run(r, &req)
}

// writePushError writes an error of changes.watch or channels.stop. An
// unverified webhook domain is a 401 that says nothing of credentials.
func writePushError(w http.ResponseWriter, e *apiError) {
	if e.Code == http.StatusUnauthorized && e != errUnauthenticated {
		writeJSON(w, e.Code, map[string]any{"error": e})
		return
	}
	writeAPIError(w, e)
}

// watch is changes.watch, with s.mu held: it checks the parameters as
// changes.list does and the channel as Drive does, and registers the
// channel. The channel returned is nil when it is not to deliver (after
// Close).
func (s *Server) watch(r *http.Request, asked *channelRequest) (*channel, []byte, *apiError) {
	tok, aerr := s.authenticate(r, isDriveScope)
	if aerr != nil {
		return nil, nil, aerr
	}
	q := r.URL.Query()
	m, aerr := fieldsParam(q.Get("fields"), changesWatchEndpoint)
	if aerr != nil {
		return nil, nil, aerr
	}
	req, inDrive, aerr := s.watchedFeed(&call{q: q, v: s.viewer(tok.user)})
	if aerr != nil {
		return nil, nil, aerr
	}
	if aerr := s.checkChannel(asked); aerr != nil {
		return nil, nil, aerr
	}
	expiration, aerr := channelExpiration(asked.Expiration, time.Now())
	if aerr != nil {
		return nil, nil, aerr
	}
	ch := s.newChannel(asked, tok.user, q, r.Host)
	ch.expiration, ch.scope, ch.includeRemoved, ch.inDrive = expiration, req.scope, req.includeRemoved, inDrive
	res := &drive.Channel{Kind: "api#channel", Id: ch.id, ResourceId: ch.resourceID, ResourceUri: ch.resourceURI,
		Token: ch.token, Expiration: expiration.UnixMilli()}
	body := appendJSON(nil, reflect.ValueOf(res), m)
	s.push.made[ch.id] = append(s.push.made[ch.id], ch)
	if s.push.closed {
		ch.cancel()
		return nil, body, nil
	}
	s.push.live[ch.id] = ch
	s.push.wg.Add(1)
	return ch, body, nil
}

// watchedFeed checks the parameters of changes.watch as changes.list does,
// and returns the changes.list request they make and whether it covers the
// "drive" space.
func (s *Server) watchedFeed(c *call) (*changesRequest, bool, *apiError) {
	req, aerr := s.parseChanges(c)
	if aerr != nil {
		return nil, false, aerr
	}
	if _, aerr := intParam(c.q, "pageSize", 100); aerr != nil {
		return nil, false, aerr
	}
	inDrive, aerr := driveSpace(c.q)
	if aerr != nil {
		return nil, false, aerr
	}
	return req, inDrive, nil
}

// newChannel makes the channel a watch asked for, on the change log of user
// (of q's driveId if set).
func (s *Server) newChannel(asked *channelRequest, user string, q url.Values, host string) *channel {
	ch := &channel{id: asked.ID, token: asked.Token, address: asked.Address, user: user, driveID: q.Get("driveId"),
		start: s.log.next, cursor: s.log.next, settled: -1, kick: make(chan struct{}, 1)}
	ch.ctx, ch.cancel = context.WithCancel(context.Background())
	sum := sha256.Sum256([]byte("changes\x00" + user + "\x00" + ch.driveID))
	ch.resourceID = base64.RawURLEncoding.EncodeToString(sum[:])[:27]
	listed := url.Values{"alt": {"json"}}
	for k, v := range q {
		switch k {
		case "alt", "fields", "prettyPrint", "key", "quotaUser", "$.xgafv":
		default:
			listed[k] = v
		}
	}
	ch.resourceURI = "http://" + host + "/drive/v3/changes?" + listed.Encode()
	return ch
}

// checkChannel checks the channel a watch asks for as Drive does: an ID
// unique among the live channels, type web_hook, an https:// address (or
// http:// on loopback with AllowHTTPWebhooks) whose host is not refused.
func (s *Server) checkChannel(asked *channelRequest) *apiError {
	switch {
	case asked.ID == "":
		return newAPIError(http.StatusBadRequest, "required", "Required", "")
	case len(asked.ID) > maxChannelIDLength || !channelIDPattern.MatchString(asked.ID):
		return newAPIError(http.StatusBadRequest, "push.channelIdInvalid",
			`Channel id must match [A-Za-z0-9\-_\+/=]+ and be at most 64 characters`, "")
	case asked.Type != "web_hook" && asked.Type != "webhook":
		return newAPIError(http.StatusBadRequest, "push.channelTypeNotSupported",
			"Channel type '"+asked.Type+"' is not supported.", "")
	}
	u, err := url.Parse(asked.Address)
	switch {
	case err != nil || u.Hostname() == "":
		return newAPIError(http.StatusBadRequest, "push.webhookUrlNoHostOrAddress",
			"WebHook callback must have a host or address: "+asked.Address, "")
	case u.Scheme != "https" && (u.Scheme != "http" || !s.push.allowHTTP || !isLoopback(u.Hostname())):
		return newAPIError(http.StatusBadRequest, "push.webhookUrlNotHttps",
			"WebHook callback must be HTTPS: "+asked.Address, "")
	case s.push.refused[strings.ToLower(u.Host)]:
		return newAPIError(http.StatusUnauthorized, "push.webhookUrlUnauthorized",
			"Unauthorized WebHook callback channel: "+asked.Address, "")
	case s.liveChannel(asked.ID) != nil:
		return newAPIError(http.StatusBadRequest, "channelIdNotUnique", "Channel id not unique", "")
	}
	return nil
}

// isLoopback reports whether a URL's host name is a loopback host.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// channelExpiration returns when a channel expires: as asked, capped at
// Drive's maximum for the changes resource, or its default when the watch
// asks for none. An expiration already past is refused (the fake's choice:
// Drive documents none).
func channelExpiration(asked json.Number, now time.Time) (time.Time, *apiError) {
	if asked == "" {
		return now.Add(defaultChannelTTL), nil
	}
	ms, err := asked.Int64()
	if err != nil {
		return time.Time{}, newAPIError(http.StatusBadRequest, "invalid", "Invalid value for expiration: "+asked.String(), "")
	}
	if ms == 0 {
		return now.Add(defaultChannelTTL), nil
	}
	at := time.UnixMilli(ms)
	if !at.After(now) {
		return time.Time{}, newAPIError(http.StatusBadRequest, "invalid", "Expiration time is in the past", "")
	}
	if limit := now.Add(maxChangesChannelTTL); at.After(limit) {
		return limit, nil
	}
	return at, nil
}

// stop is channels.stop, with s.mu held: the channel with that ID and
// resource ID, if live, is stopped; any caller with a Drive scope may stop
// any channel of the fake.
func (s *Server) stop(r *http.Request, asked *channelRequest) (*channel, []byte, *apiError) {
	tok, aerr := s.authenticate(r, isDriveScope)
	if aerr != nil {
		return nil, nil, aerr
	}
	ch := s.liveChannel(asked.ID)
	if ch == nil || ch.resourceID != asked.ResourceID {
		msg := "Channel '" + asked.ID + "' not found for project '" + numericID(tok.clientID, 12) + "'"
		return nil, nil, newAPIError(http.StatusNotFound, "notFound", msg, "")
	}
	delete(s.push.live, ch.id)
	ch.cancel()
	return nil, []byte{}, nil
}
