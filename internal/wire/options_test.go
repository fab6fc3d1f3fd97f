package wire_test

import (
	"crypto/sha256"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
	"github.com/foldermirror/foldermirror/httpapi"
	"github.com/foldermirror/foldermirror/httpapi/admin"
	"github.com/foldermirror/foldermirror/httpapi/auth"
	"github.com/foldermirror/foldermirror/internal/fmtest"
	"github.com/foldermirror/foldermirror/internal/wire"
	"github.com/foldermirror/foldermirror/push"
	"github.com/prometheus/client_golang/prometheus"
)

// optionsConfig is a configuration with something of every key the options
// are made of: two domains, one with a directory, flags, users and codes;
// a Microsoft tenant; two libraries; trusted proxies.
func optionsConfig() *config.Config {
	c := config.Default()
	c.AdminListen = "127.0.0.1:9090"
	c.Limits = config.Limits{CallerRequestsPerSecond: 5, CallerBurst: 7}
	c.TrustedProxies = []string{"10.0.0.0/8", "192.0.2.7"}
	c.Auth.ClockSkew = time.Minute
	c.Auth.Google.ClientIDs = []string{"a.apps.googleusercontent.com"}
	c.Auth.Microsoft.Tenants = []config.Tenant{{TenantID: "6e2c7c1a-5b7d-4f0e-9a43-0c1f1f4b2a10", ApplicationIDs: []string{"app"}}}
	c.FlagDefaults = map[string]string{"theme": "light", "beta": "false"}
	c.Domains = []config.Domain{{
		Name:               "example.com",
		AdminEmail:         "admin@example.com",
		AllowlistedDomains: []string{"partner.org"},
		Users:              []string{"alice@example.com"},
		Flags:              map[string]string{"beta": "true"},
		SecurityCodes: []config.SecurityCode{
			{SHA256: fmtest.CodeDigest("admin-code"), ActAs: "admin", Expires: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
			{SHA256: fmtest.CodeDigest("alice-code"), ActAs: "user:alice@example.com"},
		},
	}, {Name: "other.org"}}
	c.Libraries = []config.Library{
		{ID: "eng", Name: "Engineering", Domain: "example.com", StorageAccount: "s@example.com", RootFolderID: "root", FolderDefinitionID: "standard"},
		{ID: "team", Name: "team", Domain: "example.com", StorageAccount: "s@example.com", SharedDriveID: "drive"},
	}
	return c
}

func TestAuthOptions(t *testing.T) {
	c := optionsConfig()
	var dir fm.Directories
	got := wire.AuthOptions(c, auth.Options{Directory: &dir})
	want := auth.Options{
		ClockSkew: time.Minute,
		Google:    auth.Google{ClientIDs: c.Auth.Google.ClientIDs, JWKSURL: c.Auth.Google.JWKSURL, TokeninfoURL: c.Auth.Google.TokeninfoURL},
		Microsoft: auth.Microsoft{JWKSURLs: c.Auth.Microsoft.JWKSURLs,
			Tenants: []auth.Tenant{{ID: "6e2c7c1a-5b7d-4f0e-9a43-0c1f1f4b2a10", ApplicationIDs: []string{"app"}}}},
		Domains: []auth.Domain{{
			Name:  "example.com",
			Users: []string{"alice@example.com"},
			SecurityCodes: []auth.SecurityCode{
				{SHA256: sha256.Sum256([]byte("admin-code")), ActAsAdmin: true, Expires: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
				{SHA256: sha256.Sum256([]byte("alice-code")), ActAsUser: "alice@example.com"},
			},
		}, {Name: "other.org", SecurityCodes: []auth.SecurityCode{}}},
		Directory: &dir,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("authOptions:\n%+v\nwant\n%+v", got, want)
	}
}

// The API's options: each domain's flags are flagDefaults under its own.
func TestAPIOptions(t *testing.T) {
	metrics := httpapi.NewMetrics(prometheus.NewRegistry())
	got := wire.APIOptions(optionsConfig(), httpapi.Options{Metrics: metrics})
	want := httpapi.Options{
		Libraries: fm.NewLibrarySet([]fm.Library{
			{ID: "eng", Name: "Engineering", Domain: "example.com", StorageAccount: "s@example.com", RootFolderID: "root", FolderDefinitionID: "standard"},
			{ID: "team", Name: "team", Domain: "example.com", StorageAccount: "s@example.com", SharedDriveID: "drive"},
		}),
		Domains: []httpapi.Domain{
			{Name: "example.com", AllowlistedDomains: []string{"partner.org"}, Flags: map[string]string{"theme": "light", "beta": "true"}},
			{Name: "other.org", Flags: map[string]string{"theme": "light", "beta": "false"}},
		},
		TrustedProxies:          []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32")},
		CallerRequestsPerSecond: 5,
		CallerBurst:             7,
		Metrics:                 metrics,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("apiOptions:\n%+v\nwant\n%+v", got, want)
	}
}

// The admin listener's address and libraries, in the configuration's order.
func TestAdminOptions(t *testing.T) {
	got := wire.AdminOptions(optionsConfig(), admin.Options{Token: "secret"})
	want := admin.Options{Listen: "127.0.0.1:9090",
		Libraries: fm.NewLibrarySet(optionsConfig().CoreLibraries()), Token: "secret"}
	if !reflect.DeepEqual(got, want) || !slices.Equal(got.Libraries.IDs(), []string{"eng", "team"}) {
		t.Errorf("adminOptions:\n%+v\nwant\n%+v", got, want)
	}
}

// Push's options: the configured address and lifetime, and a set of the
// configured libraries unless given one: a feed for each storage
// account's My Drive libraries and for each shared drive.
func TestPushOptions(t *testing.T) {
	c := optionsConfig()
	c.Push = config.Push{Address: "https://fm.example.com/drive/push", ChannelTTL: 36 * time.Hour}
	c.Storage.RequestsPerSecond = 40
	c.Domains[0].SharedDrives = &config.SharedDrives{StorageAccount: "drives@example.com"}
	metrics := push.NewMetrics(prometheus.NewRegistry())
	got := wire.PushOptions(c, push.Options{Metrics: metrics})
	want := push.Options{
		Address:           "https://fm.example.com/drive/push",
		ChannelTTL:        36 * time.Hour,
		Libraries:         fm.NewLibrarySet(c.CoreLibraries()),
		CallsPerSecond:    5, // a quarter of storage.requestsPerSecond, two requests a watch
		DiscoveryAccounts: []string{"drives@example.com"},
		Metrics:           metrics,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pushOptions:\n%+v\nwant\n%+v", got, want)
	}
	wantFeeds := []push.Feed{
		{Key: "drive:drive", User: "s@example.com", DriveID: "drive", Libraries: []string{"team"}},
		{Key: "user:s@example.com", User: "s@example.com", Libraries: []string{"eng"}},
	}
	if feeds := push.Feeds(got.Libraries.List()); !reflect.DeepEqual(feeds, wantFeeds) {
		t.Errorf("feeds %+v, want %+v", feeds, wantFeeds)
	}
	libs := fm.NewLibrarySet(nil)
	if got := wire.PushOptions(c, push.Options{Libraries: libs}); got.Libraries != libs {
		t.Error("PushOptions replaced the library set given")
	}
}
