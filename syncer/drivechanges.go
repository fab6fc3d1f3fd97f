package syncer

import (
	"context"
	"errors"
	"fmt"
)

// maxUserLogPages bounds the pages of a user change log read in one go: a
// server whose page tokens lead back cannot keep a reader forever.
const maxUserLogPages = 1000

// UserChangesToken returns the token from which changes to a storage
// account's user change log are read (changes.getStartPageToken, as the
// account).
func (s *Syncer) UserChangesToken(ctx context.Context, account string) (string, error) {
	svc, err := s.clients.Drive(account)
	if err != nil {
		return "", err
	}
	t, err := svc.Changes.GetStartPageToken().SupportsAllDrives(true).Context(ctx).Do()
	if err != nil {
		return "", fmt.Errorf("read the change token of %s's change log: %w", account, err)
	}
	return t.StartPageToken, nil
}

// DrivesChanged reads a storage account's user change log from token and
// tells whether it carries a change of type drive (the account added to a
// shared drive or removed from one, a drive renamed or deleted: Drive's
// guide says a user's log carries the changes to the shared drives the user
// is a member of), with the token to read from next time. A token Drive no
// longer accepts counts as a change: the drives are to be read again.
func (s *Syncer) DrivesChanged(ctx context.Context, account, token string) (changed bool, next string, err error) {
	svc, err := s.clients.Drive(account)
	if err != nil {
		return false, "", err
	}
	for range maxUserLogPages {
		page, err := svc.Changes.List(token).PageSize(changesPageSize).IncludeRemoved(true).SupportsAllDrives(true).
			Fields("nextPageToken,newStartPageToken,changes(changeType)").Context(ctx).Do()
		if tokenRefused(err) {
			next, err := s.UserChangesToken(ctx, account)
			return true, next, err
		}
		if err != nil {
			return false, "", fmt.Errorf("read %s's change log: %w", account, err)
		}
		for _, c := range page.Changes {
			changed = changed || c.ChangeType == "drive"
		}
		if page.NewStartPageToken != "" {
			return changed, page.NewStartPageToken, nil
		}
		if page.NextPageToken == "" || page.NextPageToken == token {
			return false, "", fmt.Errorf("read %s's change log: %w", account, errNoProgress)
		}
		token = page.NextPageToken
	}
	return false, "", fmt.Errorf("read %s's change log: more than %d pages: %w", account, maxUserLogPages, errNoProgress)
}

// errNoProgress: Drive's pages of a log lead nowhere (no next page, or one
// that leads back).
var errNoProgress = errors.New("the pages lead nowhere (neither a next page nor a new start token)")
