package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/config"
)

// Resource kinds.
const (
	kindFolder             = "service#folder"
	kindFolderList         = "service#folderList"
	kindFolderPermissions  = "service#folderStoragePermissions"
	kindStoragePermission  = "service#storagePermission"
	kindConfigurationFlags = "service#configurationFlags"
)

// folderJSON is a Folder on the wire, without its subfolders, which are
// written after it so that nested lists can stream.
type folderJSON struct {
	Editable              bool     `json:"editable"`
	EditableDocuments     bool     `json:"editableDocuments"`
	FileID                string   `json:"fileId"`
	FolderServiceID       string   `json:"folderServiceId"`
	FolderDefinitionID    string   `json:"folderDefinitionId"`
	FolderIsRoot          bool     `json:"folderIsRoot"`
	Kind                  string   `json:"kind"`
	LibraryID             string   `json:"libraryId"`
	LibraryName           string   `json:"libraryName"`
	Name                  string   `json:"name"`
	ParentFolderServiceID string   `json:"parentFolderServiceId"`
	ParentFolderStorageID string   `json:"parentFolderStorageId"`
	ParentFolderIsRoot    bool     `json:"parentFolderIsRoot"`
	PermittedOperations   []string `json:"permittedOperations"`
	ResourceKey           string   `json:"resourceKey"`
	RestrictedDownload    bool     `json:"restrictedDownload"`
}

// libraryView is a synced library as the API shows it.
type libraryView struct {
	cfg   *config.Library
	state *fm.LibraryState
}

func (l libraryView) folderJSON(f *fm.Folder, role fm.Role) folderJSON {
	isRoot := f.ID == l.state.RootID
	def := f.DefinitionID
	if def == "" {
		def = l.cfg.FolderDefinitionID
	}
	writer := role >= fm.RoleWriter
	return folderJSON{
		Editable:              writer,
		EditableDocuments:     writer,
		FileID:                f.ID,
		FolderServiceID:       f.ID,
		FolderDefinitionID:    def,
		FolderIsRoot:          isRoot,
		Kind:                  kindFolder,
		LibraryID:             l.cfg.ID,
		LibraryName:           l.cfg.Name,
		Name:                  f.Name,
		ParentFolderServiceID: f.ParentID,
		ParentFolderStorageID: f.ParentID,
		ParentFolderIsRoot:    f.ParentID != "" && f.ParentID == l.state.RootID,
		PermittedOperations:   permittedOperations(role, f, isRoot, l.state),
		ResourceKey:           f.ResourceKey,
		RestrictedDownload:    f.RestrictedDownload,
	}
}

// streamFlushBytes is how much a folder stream buffers before writing out.
const streamFlushBytes = 32 << 10

// streamWriteTimeout is the time each flush of a stream gets, so that a long
// stream outlives the server's WriteTimeout while a stalled client does not.
const streamWriteTimeout = 30 * time.Second

// folderStream writes a folder list response as it is produced:
// {"items":[ folder {..., "subfolders":[ ... ]} ... ],"kind":...}.
type folderStream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf *bufio.Writer
	enc *json.Encoder
	tmp bytes.Buffer
	// open counts the folders whose subfolders list is still open.
	open int
	// first tells, per nesting level, that no item was written there yet.
	first []bool
}

func newFolderStream(w http.ResponseWriter) *folderStream {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	s := &folderStream{w: w, rc: http.NewResponseController(w), first: []bool{true}}
	s.buf = bufio.NewWriterSize(flushWriter{s}, streamFlushBytes)
	s.enc = json.NewEncoder(&s.tmp)
	s.enc.SetEscapeHTML(false)
	s.buf.WriteString(`{"items":[`)
	return s
}

// add writes a folder at nesting depth (0: an item of the list), closing the
// subfolders lists of deeper folders first.
func (s *folderStream) add(f folderJSON, depth int) error {
	s.close(depth)
	if !s.first[depth] {
		s.buf.WriteByte(',')
	}
	s.first[depth] = false
	s.tmp.Reset()
	if err := s.enc.Encode(f); err != nil {
		return err
	}
	s.buf.Write(bytes.TrimSuffix(s.tmp.Bytes(), []byte("}\n")))
	_, err := s.buf.WriteString(`,"subfolders":[`)
	s.open++
	s.first = append(s.first[:depth+1], true)
	return err
}

// close ends the subfolders lists of folders deeper than depth.
func (s *folderStream) close(depth int) {
	for s.open > depth {
		s.buf.WriteString("]}")
		s.open--
	}
}

// finish ends the response.
func (s *folderStream) finish() error {
	s.close(0)
	s.buf.WriteString(`],"kind":"` + kindFolderList + `"}`)
	return s.buf.Flush()
}

// flushWriter sends a stream's buffer to the client at once, with a fresh
// write deadline.
type flushWriter struct{ s *folderStream }

func (w flushWriter) Write(p []byte) (int, error) {
	_ = w.s.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	n, err := w.s.w.Write(p)
	if err != nil {
		return n, err
	}
	return n, w.s.rc.Flush()
}

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
