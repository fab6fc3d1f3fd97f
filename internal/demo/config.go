package demo

import "github.com/foldermirror/foldermirror/config"

// Config returns a configuration for the world: the fake's endpoints, the
// key file at keyFile, the index in dataDir, the API on listen.
func (w *World) Config(listen, adminListen, dataDir, keyFile string) *config.Config {
	c := config.Default()
	c.Listen, c.AdminListen, c.DataDir = listen, adminListen, dataDir
	c.Storage = config.Storage{
		CredentialsFile:   keyFile,
		Endpoint:          w.Fake.DriveEndpoint(),
		DirectoryEndpoint: w.Fake.DirectoryEndpoint(),
		RequestsPerSecond: 1000,
		Concurrency:       8,
	}
	c.Auth.Google = config.GoogleAuth{ClientIDs: []string{ClientID}, JWKSURL: w.Fake.GoogleJWKSURL(), TokeninfoURL: w.Fake.TokeninfoURL()}
	c.FlagDefaults = map[string]string{"showRecent": "false", "theme": "light"}
	c.Domains = []config.Domain{{
		Name:               Domain,
		AdminEmail:         Admin,
		AllowlistedDomains: []string{"partner.org"},
		Flags:              map[string]string{"showRecent": "true"},
		// Every shared drive of the storage account's is a library: the
		// team drives, and Sales, served once, as configured below.
		SharedDrives: &config.SharedDrives{StorageAccount: StorageAccount, FolderDefinitionID: "standard"},
	}}
	for _, l := range w.Libraries {
		lib := config.Library{ID: l.ID, Name: l.Name, Domain: Domain, StorageAccount: StorageAccount, FolderDefinitionID: "standard"}
		if l.SharedDriveID != "" {
			lib.SharedDriveID = l.SharedDriveID
		} else {
			lib.RootFolderID = l.RootFolderID
		}
		c.Libraries = append(c.Libraries, lib)
	}
	return c
}
