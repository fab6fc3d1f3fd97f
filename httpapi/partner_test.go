package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
)

// partnersTree is a library of example.com shared with its allowlisted
// partner, partner.org (a domain foldermirror does not configure):
//
//	pp-root Partners        storage owner
//	├── pp-domain           + partner.org reader (discoverable)
//	├── pp-pat              + pat@partner.org reader
//	└── pp-none
func partnersTree() []fm.SyncedFolder {
	pPartnerDomain := fm.Permission{ID: "p-partner", Type: "domain", Role: "reader", Domain: "partner.org", AllowFileDiscovery: true}
	pPatReader := fm.Permission{ID: "p-pat", Type: "user", Role: "reader", EmailAddress: "pat@partner.org"}
	return []fm.SyncedFolder{
		sf("pp-root", "", "Partners", pStorage),
		sf("pp-domain", "pp-root", "Shared with partner.org", pStorage, pPartnerDomain),
		sf("pp-pat", "pp-root", "Shared with Pat", pStorage, pPatReader),
		sf("pp-none", "pp-root", "Not shared", pStorage),
	}
}

// newPartnersFixture is the fixture with the Partners library too.
func newPartnersFixture(t *testing.T) *fixture {
	f := newFixtureWith(t, fixtureOptions{libraries: []fm.Library{{ID: "lib-partners", Name: "Partners", Domain: "example.com",
		StorageAccount: "storage@example.com", RootFolderID: "pp-root", FolderDefinitionID: "standard"}}})
	writeTree(t, f.db, "lib-partners", fm.LibraryState{RootID: "pp-root", LastFullSync: syncedAt}, partnersTree())
	return f
}

// sees returns the folders of the Partners library a caller may list, and
// those it may read directly; or the library's status if not 200.
func (f *fixture) sees(authorization string) (listed, readable []string, status int) {
	f.t.Helper()
	resp, body := f.getWith("/folder/v1/libraries/lib-partners/folders", authorization)
	if resp.StatusCode != http.StatusOK {
		return nil, nil, resp.StatusCode
	}
	var list folderList
	if err := json.Unmarshal(body, &list); err != nil {
		f.t.Fatalf("library listing: %v\n%s", err, body)
	}
	listed = ids(list.Items)
	slices.Sort(listed)
	for _, id := range []string{"pp-domain", "pp-none", "pp-pat", "pp-root"} {
		resp, _ := f.getWith("/folder/v1/files/"+id, authorization)
		perms, _ := f.getWith("/folder/v1/folders/"+id+"/permissions", authorization)
		switch {
		case resp.StatusCode == http.StatusOK && perms.StatusCode == http.StatusOK:
			readable = append(readable, id)
		case resp.StatusCode != http.StatusNotFound || perms.StatusCode != http.StatusNotFound:
			f.t.Errorf("folder %s: %d, its permissions %d; want both 200 or both 404", id, resp.StatusCode, perms.StatusCode)
		}
	}
	return listed, readable, http.StatusOK
}

// A consumer Google account whose address is at an allowlisted partner's
// domain (no hd) is not of the partner's organisation: folders shared with
// the partner's domain are 404 to it and absent from its listings, with
// either kind of token, while the folders shared with its address stay
// visible; a library it has no user grant in does not exist for it. The
// partner's Workspace account (an ID token with hd = partner.org) gets the
// domain grants; its access tokens do not (tokeninfo carries no hd).
func TestPartnerDomainGrants(t *testing.T) {
	f := newPartnersFixture(t)
	const pat, quinn = "pat@partner.org", "quinn@partner.org"
	access := func(email string) string {
		return "Bearer " + f.fake.GoogleAccessToken(clientID, email, time.Hour, "email")
	}
	consumerAccess := func(email string) string {
		return "Bearer " + f.fake.ConsumerAccessToken(clientID, email, time.Hour, "email")
	}
	withDomain, withoutDomain := []string{"pp-domain", "pp-pat"}, []string{"pp-pat"}
	for _, tc := range []struct {
		caller, authorization string
		want                  []string // listed and readable; nil: the library is 404
	}{
		{"pat's Workspace account, ID token (hd partner.org)", "Bearer " + f.token(pat), withDomain},
		{"pat's consumer account, ID token (no hd)", "Bearer " + f.fake.ConsumerIDToken(clientID, pat), withoutDomain},
		{"pat's consumer account, access token", consumerAccess(pat), withoutDomain},
		{"pat's Workspace account, access token (no hd)", access(pat), withoutDomain},
		{"quinn's Workspace account, ID token (hd partner.org)", "Bearer " + f.token(quinn), []string{"pp-domain"}},
		{"quinn's consumer account, ID token (no hd)", "Bearer " + f.fake.ConsumerIDToken(clientID, quinn), nil},
		{"quinn's consumer account, access token", consumerAccess(quinn), nil},
	} {
		listed, readable, status := f.sees(tc.authorization)
		switch {
		case tc.want == nil && status != http.StatusNotFound:
			t.Errorf("%s: the library is %d (lists %v, reads %v), want 404", tc.caller, status, listed, readable)
		case tc.want != nil && (!slices.Equal(listed, tc.want) || !slices.Equal(readable, tc.want)):
			t.Errorf("%s: lists %v and reads %v (library %d), want %v", tc.caller, listed, readable, status, tc.want)
		}
	}
	// The partner's domain is not configured: its callers have no flags,
	// whatever their account.
	for _, token := range []string{f.token(pat), f.fake.ConsumerIDToken(clientID, pat)} {
		if resp, body := f.get("/domain/v1beta1/configurationFlags", token); resp.StatusCode != http.StatusNotFound {
			t.Errorf("flags of a partner caller: %d %s, want 404", resp.StatusCode, body)
		}
	}
}
