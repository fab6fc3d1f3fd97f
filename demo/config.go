package demo

import (
	"fmt"
	"strings"
)

// ConfigYAML returns a configuration for the world: the fake's endpoints, the
// key file at keyFile, the index in dataDir, the API on listen.
func (w *World) ConfigYAML(listen, adminListen, dataDir, keyFile string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "listen: %q\nadminListen: %q\ndataDir: %q\n", listen, adminListen, dataDir)
	fmt.Fprintf(&b, "storage:\n  credentialsFile: %q\n  endpoint: %q\n  directoryEndpoint: %q\n  requestsPerSecond: 1000\n  concurrency: 8\n",
		keyFile, w.Fake.DriveEndpoint(), w.Fake.DirectoryEndpoint())
	fmt.Fprintf(&b, "auth:\n  google:\n    clientIds: [%q]\n    jwksUrl: %q\n    tokeninfoUrl: %q\n", ClientID, w.Fake.GoogleJWKSURL(), w.Fake.TokeninfoURL())
	fmt.Fprintf(&b, "flagDefaults: {showRecent: \"false\", theme: \"light\"}\n")
	fmt.Fprintf(&b, "domains:\n  - name: %s\n    adminEmail: %s\n    allowlistedDomains: [partner.org]\n    flags: {showRecent: \"true\"}\n", Domain, Admin)
	b.WriteString("libraries:\n")
	for _, l := range w.Libraries {
		fmt.Fprintf(&b, "  - id: %s\n    name: %s\n    domain: %s\n    storageAccount: %s\n    folderDefinitionId: standard\n",
			l.ID, l.Name, Domain, StorageAccount)
		if l.SharedDriveID != "" {
			fmt.Fprintf(&b, "    sharedDriveId: %q\n", l.SharedDriveID)
		} else {
			fmt.Fprintf(&b, "    rootFolderId: %q\n", l.RootFolderID)
		}
	}
	return []byte(b.String())
}
