// Package googlefake is an in-memory fake of the Google APIs foldermirror
// uses: the OAuth 2.0 token endpoint (service-account JWT bearer grants with
// domain-wide delegation, and refresh tokens), the tokeninfo endpoint for
// users' access tokens, Google's ID-token signing keys (JWKS), the read side
// of the Drive v3 API (files.list, files.get, permissions.list, drives.get,
// drives.list, changes.getStartPageToken, changes.list), Drive's push
// notifications (changes.watch, channels.stop, and the messages posted to a
// channel's address), and the read side of the Admin SDK Directory API
// (users.list, groups.list, members.list). It also fakes a second,
// independent signing authority: Microsoft Entra ID's ID tokens and their
// keys.
//
// It speaks Google's wire format, so the real client libraries
// (google.golang.org/api/drive/v3, google.golang.org/api/admin/directory/v1
// and golang.org/x/oauth2/google) run against it unchanged: point them at it
// with option.WithEndpoint(s.DriveEndpoint()) or
// option.WithEndpoint(s.DirectoryEndpoint()) and a key file from
// s.ServiceAccountKey, whose token_uri is the fake's.
//
// Tests build the world with the helper methods (AddUser, AddGroup,
// MakeAdmin, CreateFolder, Share, Move, Trash, ...). Every Drive helper
// records entries in a change log that changes.list reports, as Drive does.
//
// Every request on the paths of Drive (/drive/v3/) and the Directory
// (/admin/) is first checked against Google's discovery document of its
// API, embedded from google.golang.org/api (discovery/, whose README names
// the version), and refused with 400 in Google's error shape, before any
// latency, fault or call count, for what the document does not allow:
//   - an unknown method: no method's path (flatPath, or path for {+name}
//     expansions) under the document's servicePath has the request's, or
//     none with its HTTP method: reason badRequest;
//   - a query parameter that is neither the method's nor a global one
//     (fields, alt, prettyPrint, quotaUser, key, ...), given twice without
//     being repeated, not of its type (integer and its format, boolean,
//     number), outside its enum or its minimum and maximum, or a required
//     one missing: reason invalidParameter, location the parameter. Page
//     sizes are bounded so (files.list 1000, permissions.list and
//     drives.list 100, users.list 500); groups.list and members.list state
//     their maximum, 200, in their description only, and it is read from
//     there;
//   - a fields selection (Google's partial-response syntax,
//     "a,b/c,d(e,f(g)),*") naming a field that the response's schema,
//     through $ref, arrays' items and maps' additionalProperties, lacks:
//     invalidParameter "Invalid field selection PATH". What a wildcard
//     selects below it is not checked;
//   - a JSON body with a key its request schema lacks (changes.watch's and
//     channels.stop's Channel): badRequest.
//
// What the documents mark deprecated (parameters, fields selected,
// methods) is accepted and counted (DeprecatedUses); RequestShapes lists
// the distinct shapes of the requests received, refused ones with the
// reason. Both start again at ResetCalls.
//
// Choices where Drive's behaviour is underspecified are documented on the
// methods concerned; the notable ones are:
//   - Without a fields parameter each method returns Google's default field
//     set (files.list and files.get: kind, id, name and mimeType; the files
//     in changes.list likewise), not the full resource, so a client must ask
//     for what it needs, as with Google.
//   - Page sizes above a method's maximum are refused by the check above,
//     not coerced down.
//   - Files carry their effective permissions inline (the permissions field)
//     only when they are not in a shared drive, the acting user can share
//     them, and they have at most 100 effective permissions; otherwise clients
//     must call permissions.list.
//   - Files have a createdTime and a modifiedTime, in milliseconds, stamped
//     by the fake's clock (SetClock) or set by a test (SetFileTimes,
//     SpreadTimes). A rename, a change of parents and Touch set
//     modifiedTime; permissions, trash and a folder's children do not.
//   - files.list's q compares createdTime and modifiedTime with < <= > >=
//     = and != to RFC 3339 times (UTC unless they name an offset) or
//     dates; a malformed time is an invalid query, 400 like the others.
//   - With IgnoreCreatedTimeBounds, files.list takes createdTime
//     comparisons as true, as some servers claiming to be Drive do.
//   - files.list sorts by orderBy's createdTime and modifiedTime, asc or
//     desc, in comma lists; ties go in creation order (reversed after a
//     desc key). Without orderBy it lists by createdTime, which is creation
//     order unless a test set times. Other keys Drive sorts by answer 501;
//     unknown keys 400 "Invalid Value", as Drive. Listings in createdTime
//     or modifiedTime order read an index of that time: a page costs its
//     size and a binary search, within the query's range of that time.
//     Page tokens hold the order and a position in it: they stay valid
//     while the tree changes, and a token of another order is refused.
//   - Requests reaching into shared drives (driveId, corpora drive or
//     allDrives) need includeItemsFromAllDrives=true (else 403
//     teamDriveIncludeItemsRequired, as Drive answers), and setting that
//     needs supportsAllDrives=true (else 400 invalid).
//   - drives.list lists the shared drives the acting user is a member of
//     (through its user, a group or its domain), hidden ones included
//     (hiding, HideDrive, is a member's preference), in creation order;
//     its q is not implemented (501). A user's change log carries a
//     "drive" change when the user is added to a drive, when a drive of
//     its renames or changes members, and a removed one when the user
//     leaves it or it is deleted (DeleteSharedDrive).
//   - A change page token from before ExpireChangeTokens is refused with
//     400 reason "invalid", location "pageToken" ("Invalid Value"), the answer
//     Drive gives to page tokens it does not accept.
//   - Permission changes and moves log a change for every descendant whose
//     effective permissions change, as Drive does for My Drive today; with
//     LogItemAlone(true), for the item alone (and the shared drive, for its
//     members), as Drive may.
//   - RemoveUser deletes an account: the permissions granted to it are
//     listed with deleted true and grant nothing.
//   - Group membership is evaluated at request time; AddGroup,
//     AddGroupMember and RemoveGroupMember record no change.
//   - A changes.watch channel posts a "change" message when changes.list,
//     from where the channel last looked, would report something to the
//     watching user with the watch's parameters (driveId,
//     includeItemsFromAllDrives, restrictToMyDrive, spaces,
//     includeRemoved); changes the user cannot see notify nothing. Each
//     channel has one delivery goroutine, which posts outside the lock;
//     see SetNotificationDelay, DropNotifications, FlushNotifications.
//   - The Directory API models one Google Workspace customer per e-mail
//     domain: an admin (MakeAdmin) reads the users and groups of its own
//     domain only, and customer=my_customer means that domain. Lists are
//     sorted by e-mail; their page tokens stay valid while the directory
//     changes.
package googlefake

import (
	"context"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Method names counted by Calls.
const (
	callToken          = "oauth2.token"
	callCerts          = "oauth2.certs"
	callFilesList      = "drive.files.list"
	callFilesGet       = "drive.files.get"
	callPermissionList = "drive.permissions.list"
	callDrivesGet      = "drive.drives.get"
	callDrivesList     = "drive.drives.list"
	callStartPageToken = "drive.changes.getStartPageToken"
	callChangesList    = "drive.changes.list"
	callUsersList      = "directory.users.list"
	callGroupsList     = "directory.groups.list"
	callMembersList    = "directory.members.list"
	callTokeninfo      = "oauth2.tokeninfo"
	callMicrosoftKeys  = "microsoft.keys"
)

// Server is an in-memory fake of the Google APIs foldermirror uses. It is an
// http.Handler; Start serves it on a loopback test server. Safe for
// concurrent use.
type Server struct {
	faults  faults
	mu      sync.Mutex
	ts      *httptest.Server
	latency time.Duration
	// wholeLatency: latency is a response time, the fake's own time to
	// answer included (SetResponseTime), not a delay added (SetLatency).
	wholeLatency bool
	calls        map[string]int
	rng          *rand.Rand

	// People.
	users      map[string]string   // e-mail → ID of the My Drive root
	people     map[string]*person  // e-mail → directory record, for every user
	groups     map[string][]string // group e-mail → member e-mails
	unverified map[string]bool     // e-mails whose email_verified is false
	// organizations maps the domains joined by AddOrganization to their
	// customer ID; any other domain is an organisation of its own.
	organizations map[string]string

	// Authorities.
	googleKeys    keyring // Google's ID-token signing keys
	microsoftKeys keyring // Microsoft Entra ID's
	keysTaken     int     // how many keys of the pool the fake has taken (takeKey)
	keysDown      bool    // both JWKS answer 503
	tokeninfoDown bool
	tokeninfoGate chan struct{} // tokeninfo requests wait for it to close; nil: they do not wait
	tokeninfoBusy int           // tokeninfo requests being answered
	tokeninfoPeak int           // the most tokeninfo requests answered at once

	// Credentials.
	accounts      map[string]*serviceAccount // by client e-mail
	refreshTokens map[string]refreshGrant
	refused       map[[2]string]bool // (client e-mail, subject)
	accessTokens  map[string]accessToken

	// Drive content.
	files    map[string]*File
	children map[string]map[string]bool // parent ID → child IDs
	fileSeq  int64
	drives   map[string]*sharedDrive
	cache    map[string]*computed // effective state by file ID
	// driveIndex finds the shared drives a user may list.
	driveIndex driveIndex

	// byCreated and byModified hold the live files by time (see timeIndex);
	// clock stamps them (SetClock), nil for the wall clock.
	byCreated, byModified timeIndex
	clock                 func() time.Time

	// computing holds the files whose state is being computed, against
	// cycles of parents.
	computing   map[string]bool
	repeatItems bool
	itemAlone   bool // LogItemAlone
	// omitMyDriveDetails: OmitMyDriveDetails; noPermissions:
	// ListNoPermissions.
	omitMyDriveDetails, noPermissions bool
	// ignoreBounds: IgnoreCreatedTimeBounds.
	ignoreBounds TimeBounds
	// loopDrivePages: LoopDrivePages.
	loopDrivePages bool
	log            changeLog

	// Made once, for speed: principal keys, permission IDs by principal
	// key, and the structs answers are built from.
	keys  map[principal]string
	ids   map[string]string
	arena arena

	push *pushState // changes.watch channels

	checks checkLog // what the discovery check saw
}

// New returns an empty fake with no users, files or keys. Call Start to serve it.
func New() *Server {
	s := &Server{
		calls:         map[string]int{},
		rng:           rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		users:         map[string]string{},
		people:        map[string]*person{},
		groups:        map[string][]string{},
		unverified:    map[string]bool{},
		accounts:      map[string]*serviceAccount{},
		refreshTokens: map[string]refreshGrant{},
		refused:       map[[2]string]bool{},
		accessTokens:  map[string]accessToken{},
		files:         map[string]*File{},
		children:      map[string]map[string]bool{},
		byCreated:     timeIndex{field: createdTime, built: true},
		byModified:    timeIndex{field: modifiedTime},
		drives:        map[string]*sharedDrive{},
		driveIndex:    newDriveIndex(),
		cache:         map[string]*computed{},
		computing:     map[string]bool{},
		log:           newChangeLog(),
		keys:          map[principal]string{},
		ids:           map[string]string{},
		push:          newPushState(),
		checks:        newCheckLog(),
	}
	s.googleKeys.mint = func() *signingKey { return newGoogleKey(s.takeKey()) }
	s.microsoftKeys.mint = func() *signingKey { return newMicrosoftKey(s.takeKey()) }
	return s
}

// Seed makes the IDs and tokens the fake makes from now on a function of
// seed, so that a test or a demo builds the same world every time.
func (s *Server) Seed(seed uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Start serves the fake on a new httptest server bound to 127.0.0.1 and
// returns its base URL, without a trailing slash. It panics if called twice.
func (s *Server) Start() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ts != nil {
		panic("googlefake: Start called twice")
	}
	s.ts = httptest.NewServer(s)
	return s.ts.URL
}

// URL returns the base URL after Start, "" before.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ts == nil {
		return ""
	}
	return s.ts.URL
}

// Close ends every push notification channel, waiting for their
// deliveries to stop, and stops the server started by Start, if any.
func (s *Server) Close() {
	s.closePush()
	s.mu.Lock()
	ts := s.ts
	s.mu.Unlock()
	if ts != nil {
		ts.Close()
	}
}

// DriveEndpoint returns the value for option.WithEndpoint: URL()+"/drive/v3/".
func (s *Server) DriveEndpoint() string { return s.URL() + "/drive/v3/" }

// TokenURL returns the OAuth 2.0 token endpoint, URL()+"/token".
func (s *Server) TokenURL() string { return s.URL() + "/token" }

// GoogleJWKSURL returns the URL of the ID-token signing keys, URL()+"/oauth2/v3/certs".
func (s *Server) GoogleJWKSURL() string { return s.URL() + "/oauth2/v3/certs" }

// DirectoryEndpoint returns the value for option.WithEndpoint for the Admin
// SDK Directory API: URL()+"/" (the client appends admin/directory/v1/...).
func (s *Server) DirectoryEndpoint() string { return s.URL() + "/" }

// TokeninfoURL returns the tokeninfo endpoint, URL()+"/tokeninfo" (it also
// answers at URL()+"/oauth2/v3/tokeninfo").
func (s *Server) TokeninfoURL() string { return s.URL() + "/tokeninfo" }

// MicrosoftJWKSURL returns the URL of Microsoft Entra ID's signing keys, v1
// path: URL()+"/common/discovery/keys".
func (s *Server) MicrosoftJWKSURL() string { return s.URL() + "/common/discovery/keys" }

// MicrosoftJWKSURLv2 returns the v2.0 path of Microsoft Entra ID's signing
// keys, URL()+"/common/discovery/v2.0/keys"; it serves the same keys as
// MicrosoftJWKSURL.
func (s *Server) MicrosoftJWKSURLv2() string { return s.URL() + "/common/discovery/v2.0/keys" }

// ServeHTTP answers the token and tokeninfo endpoints, the Google and
// Microsoft JWKS, the Drive v3 API (push notification channels included)
// and the Directory API. Every request to Drive or the Directory is first
// checked against the API's discovery document (see the package doc).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a := apiOf(r.URL.Path); a != nil {
		if aerr := s.checkRequest(a, r); aerr != nil {
			writeAPIError(w, aerr)
			return
		}
	}
	switch p := r.URL.Path; {
	case p == "/token":
		s.count(callToken)
		s.serveToken(w, r)
	case p == "/oauth2/v3/certs":
		s.count(callCerts)
		s.serveJWKS(w, r)
	case p == "/tokeninfo" || p == "/oauth2/v3/tokeninfo":
		s.count(callTokeninfo)
		s.serveTokeninfo(w, r)
	case p == "/common/discovery/keys" || p == "/common/discovery/v2.0/keys":
		s.count(callMicrosoftKeys)
		s.serveMicrosoftJWKS(w, r, p == "/common/discovery/v2.0/keys")
	case p == "/drive/v3/changes/watch":
		s.serveWatch(w, r)
	case p == "/drive/v3/channels/stop":
		s.serveStop(w, r)
	case strings.HasPrefix(p, directoryPrefix):
		s.serveAPI(w, r, directoryRoute)
	default:
		s.serveAPI(w, r, route)
	}
}

// Calls returns a copy of the request counts by method name ("oauth2.token",
// "oauth2.tokeninfo", "oauth2.certs", "microsoft.keys", "drive.files.list",
// "drive.files.get", "drive.permissions.list", "drive.drives.get", "drive.drives.list",
// "drive.changes.getStartPageToken", "drive.changes.list",
// "drive.changes.watch", "drive.channels.stop", "directory.users.list", "directory.groups.list",
// "directory.members.list"). Every request routed to a method counts, failed
// ones included, but for those the discovery check refused (RequestShapes
// lists them).
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// CallCount returns how many requests the method has had.
func (s *Server) CallCount(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// ResetCalls sets every request count back to zero, and forgets the
// request shapes and deprecated uses seen (RequestShapes, DeprecatedUses).
func (s *Server) ResetCalls() {
	s.mu.Lock()
	clear(s.calls)
	s.mu.Unlock()
	s.checks.reset()
}

// SetLatency sets a delay added before answering every Drive and Directory
// API request (not the token and tokeninfo endpoints, not the JWKS). Zero
// removes it. It replaces a response time SetResponseTime set.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency, s.wholeLatency = d, false
}

// SetResponseTime makes every Drive and Directory API request take at least
// d, the fake's own time to answer included: the answer waits for what is
// left of d once it is ready. A benchmark of calls that each take d, like
// Drive's, then does not also pay for the fake's work (which SetLatency
// adds to d), as long as that work takes less than d. Zero removes it. It
// replaces a delay SetLatency set.
func (s *Server) SetResponseTime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency, s.wholeLatency = d, true
}

func (s *Server) count(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method]++
}

// pace applies the configured latency to a request as it arrives: it waits
// for a delay set with SetLatency now, and returns what to call before
// writing the answer, which waits for what the answer left of a response
// time set with SetResponseTime. Waits end early if the request is
// cancelled.
func (s *Server) pace(ctx context.Context) (beforeWriting func()) {
	s.mu.Lock()
	d, whole := s.latency, s.wholeLatency
	s.mu.Unlock()
	if d <= 0 {
		return func() {}
	}
	if !whole {
		sleep(ctx, d)
		return func() {}
	}
	deadline := time.Now().Add(d)
	return func() { sleep(ctx, time.Until(deadline)) }
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// randomString returns n characters drawn from alphabet.
func (s *Server) randomString(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[s.rng.IntN(len(alphabet))]
	}
	return string(b)
}
