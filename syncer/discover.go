package syncer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	fm "github.com/foldermirror/foldermirror"
	"golang.org/x/oauth2"
)

const (
	// drivesPageSize is how many drives a drives.list call asks for:
	// Drive's most.
	drivesPageSize = 100
	drivesFields   = "nextPageToken,drives(id,name,hidden)"
)

// maxDrivePages bounds the pages of one discovery (100,000 drives): a
// server whose page tokens lead on forever cannot keep it listing. Tests
// lower it.
var maxDrivePages = 1000

// DiscoverDrives returns every shared drive the storage account is a
// member of, hidden ones included (hiding is the account's preference, not
// access), sorted by ID, none as an empty list: drives.list as the
// account, every page. Pages whose tokens lead back to a page read already,
// or on past maxDrivePages, are an error.
func (s *Syncer) DiscoverDrives(ctx context.Context, storageAccount string) ([]fm.DiscoveredDrive, error) {
	svc, err := s.clients.Drive(storageAccount)
	if err != nil {
		return nil, s.describeDiscovery(err, storageAccount)
	}
	drives := []fm.DiscoveredDrive{}
	followed := map[string]bool{} // the page tokens read
	token := ""
	for range maxDrivePages {
		call := svc.Drives.List().PageSize(drivesPageSize).Fields(drivesFields).Context(ctx)
		if token != "" {
			call.PageToken(token)
		}
		page, err := call.Do()
		if err != nil {
			return nil, s.describeDiscovery(err, storageAccount)
		}
		for _, d := range page.Drives {
			drives = append(drives, fm.DiscoveredDrive{ID: d.Id, Name: d.Name, Hidden: d.Hidden})
		}
		token = page.NextPageToken
		if token == "" {
			return byID(drives), nil
		}
		if followed[token] {
			return nil, fmt.Errorf("list the shared drives of storage account %s: Drive's pages lead back to one read already", storageAccount)
		}
		followed[token] = true
	}
	return nil, fmt.Errorf("list the shared drives of storage account %s: Drive's pages go on past %d pages of %d",
		storageAccount, maxDrivePages, drivesPageSize)
}

// byID sorts drives by ID, keeping the first of those Drive listed twice
// (as pages of a list that changes may).
func byID(drives []fm.DiscoveredDrive) []fm.DiscoveredDrive {
	slices.SortStableFunc(drives, func(a, b fm.DiscoveredDrive) int { return cmp.Compare(a.ID, b.ID) })
	return slices.CompactFunc(drives, func(a, b fm.DiscoveredDrive) bool { return a.ID == b.ID })
}

// describeDiscovery says which account's drives could not be listed, and,
// when the token endpoint refused, with which key and what to check.
func (s *Syncer) describeDiscovery(err error, account string) error {
	var re *oauth2.RetrieveError
	switch {
	case !errors.As(err, &re):
		return fmt.Errorf("list the shared drives of storage account %s: %w", account, err)
	case s.clients.AuthorizedUser():
		return fmt.Errorf("list the shared drives of %s: the authorized_user key %s: the token endpoint refused its refresh token (%s): %w",
			account, s.clients.CredentialsFile(), refusal(re), err)
	}
	return fmt.Errorf("list the shared drives of storage account %s: the token endpoint refused to let the key %s act as it "+
		"(%s; is domain-wide delegation granted to the key's client for the Drive scope?): %w",
		account, s.clients.CredentialsFile(), refusal(re), err)
}

// refusal is the token endpoint's reason for refusing a token: its error
// code, which the service-account (JWT) flow leaves in the body, else the
// status of its answer.
func refusal(re *oauth2.RetrieveError) string {
	if re.ErrorCode != "" {
		return re.ErrorCode
	}
	var body struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(re.Body, &body) == nil && body.Error != "" {
		return body.Error
	}
	if re.Response != nil {
		return re.Response.Status
	}
	return "no reason given"
}
