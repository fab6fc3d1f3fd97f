package httpapi

import (
	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/httpapi/catalog"
)

// libraryView is a synced library as the API shows it to a caller: its
// definition, its catalog at one revision, and how it sees the caller.
type libraryView struct {
	st   *libState
	def  *fm.Library
	json *libraryJSON
	// configTag is the library's configTag.
	configTag []byte
	lib       *catalog.Library
	ops       *opsTable
	viewer    viewer
}

// state is the library's state at the revision shown.
func (lv *libraryView) state() *fm.LibraryState { return &lv.lib.State }

// storagePermissionJSON is a Drive permission on the wire.
type storagePermissionJSON struct {
	AdditionalRoles              []string `json:"additionalRoles"`
	Allowlisted                  bool     `json:"allowlisted"`
	BelongsToDomain              bool     `json:"belongsToDomain"`
	Email                        string   `json:"email"`
	IdentityProviderEmailAddress bool     `json:"identityProviderEmailAddress"`
	Kind                         string   `json:"kind"`
	Name                         string   `json:"name"`
	PermissionID                 string   `json:"permissionId"`
	Role                         string   `json:"role"`
	ThumbnailPhotoURL            string   `json:"thumbnailPhotoUrl"`
	Type                         string   `json:"type"`
	WithLink                     bool     `json:"withLink"`
}

type folderPermissionsJSON struct {
	StoragePermissions []storagePermissionJSON `json:"storagePermissions"`
	Kind               string                  `json:"kind"`
	RestrictedDownload bool                    `json:"restrictedDownload"`
}

type configurationFlagsJSON struct {
	ConfigurationsFlags map[string]string `json:"configurationsFlags"`
	Kind                string            `json:"kind"`
}
