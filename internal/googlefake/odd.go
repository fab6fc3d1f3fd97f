package googlefake

// Odd data: what Drive holds now and then and a client must survive.

// ForceParents sets a file's parents as given, cycles and all, without the
// checks Move makes (legacy Drive data may hold folders inside themselves),
// and sets its modifiedTime as Move does.
func (s *Server) ForceParents(fileID string, parents ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mutate(fileID, inheritance, func(f *File) {
		f.Parents = append([]string(nil), parents...)
		s.modified(f)
	})
}

// ShareWithoutEmail adds a user permission that Drive lists without an
// e-mail address (as for some deleted or hidden accounts), and returns its ID.
func (s *Server) ShareWithoutEmail(fileID, role, displayName string) string {
	return s.Share(fileID, Permission{Type: "user", Role: role, EmailAddress: "hidden-" + displayName + "@invalid",
		DisplayName: displayName, hideEmail: true})
}

// RepeatItemsAcrossPages makes each files.list and drives.list page after
// the first begin with the last item of the page before, as Drive's
// listings sometimes do.
func (s *Server) RepeatItemsAcrossPages(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repeatItems = on
}

// LoopDrivePages makes, when on, drives.list's last page carry a
// nextPageToken that leads back to the first page, as a server that keeps
// no bounds may: a client that follows page tokens without a bound lists
// forever.
func (s *Server) LoopDrivePages(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loopDrivePages = on
}
