package push

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/api/drive/v3"
	"google.golang.org/api/googleapi"
)

// Watcher is Drive's side of the channels: it registers and stops them.
// DriveWatcher is the one of Google Drive.
type Watcher interface {
	// Watch registers a channel of that ID and token on f's change log
	// from now on, posting to address until expiration, and returns
	// Drive's resourceId of the watched resource and when Drive says the
	// channel expires.
	Watch(ctx context.Context, f Feed, id, token, address string, expiration time.Time) (resourceID string, expires time.Time, err error)
	// Stop stops the channel of that ID and resourceID; one Drive no
	// longer knows (expired, stopped already) is stopped.
	Stop(ctx context.Context, f Feed, id, resourceID string) error
}

// DriveWatcher is the Watcher of Google Drive (drive/v3): it watches a
// feed with the parameters the syncer's changes.list of the feed uses
// (syncer/incremental.go), so that a channel notifies the changes the
// feed's incremental syncs read: includeRemoved and supportsAllDrives, and
// for a shared drive's feed driveId and includeItemsFromAllDrives.
type DriveWatcher struct {
	drive func(user string) (*drive.Service, error)
}

var _ Watcher = (*DriveWatcher)(nil)

// NewDriveWatcher returns the Watcher of Google Drive that acts as each
// feed's User with the client drive gives for it (googleclient's
// Clients.Drive).
func NewDriveWatcher(drive func(user string) (*drive.Service, error)) *DriveWatcher {
	return &DriveWatcher{drive: drive}
}

// RequestsPerWatch is how many requests of Drive a DriveWatcher's Watch
// makes: a rate of Drive's requests is one of RequestsPerWatch times
// fewer of the keeper's calls.
const RequestsPerWatch = 2

// Watch takes the feed's changes start token (changes.getStartPageToken)
// and registers a web_hook channel from it (changes.watch). A Drive
// refusal (a 4xx answer) comes back as an error that says Drive's reason
// and message, e.g. "push.webhookUrlUnauthorized: Unauthorized WebHook
// callback channel: https://...".
func (w *DriveWatcher) Watch(ctx context.Context, f Feed, id, token, address string, expiration time.Time) (string, time.Time, error) {
	svc, err := w.drive(f.User)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("drive client for %s: %w", f.User, err)
	}
	startCall := svc.Changes.GetStartPageToken().SupportsAllDrives(true).Context(ctx)
	if f.DriveID != "" {
		startCall = startCall.DriveId(f.DriveID)
	}
	start, err := startCall.Do()
	if err != nil {
		return "", time.Time{}, describe("changes.getStartPageToken", err)
	}
	asked := &drive.Channel{Id: id, Type: "web_hook", Address: address, Token: token, Expiration: expiration.UnixMilli()}
	call := svc.Changes.Watch(start.StartPageToken, asked).IncludeRemoved(true).SupportsAllDrives(true).Context(ctx)
	if f.DriveID != "" {
		call = call.DriveId(f.DriveID).IncludeItemsFromAllDrives(true)
	}
	ch, err := call.Do()
	if err != nil {
		return "", time.Time{}, describe("changes.watch", err)
	}
	expires := expiration
	if ch.Expiration != 0 {
		expires = time.UnixMilli(ch.Expiration)
	}
	return ch.ResourceId, expires, nil
}

// Stop stops a channel (channels.stop), as the feed's User. Drive's 404
// (a channel it no longer knows) is no error.
func (w *DriveWatcher) Stop(ctx context.Context, f Feed, id, resourceID string) error {
	svc, err := w.drive(f.User)
	if err != nil {
		return fmt.Errorf("drive client for %s: %w", f.User, err)
	}
	err = svc.Channels.Stop(&drive.Channel{Id: id, ResourceId: resourceID}).Context(ctx).Do()
	var gerr *googleapi.Error
	if errors.As(err, &gerr) && gerr.Code == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return describe("channels.stop", err)
	}
	return nil
}

// refusal is Drive's refusal of a call (a 4xx answer): its text is Drive's
// reason and message, what /status shows.
type refusal struct {
	reason, message string
	err             *googleapi.Error
}

func (r *refusal) Error() string {
	if r.reason == "" {
		return r.message
	}
	return r.reason + ": " + r.message
}

func (r *refusal) Unwrap() error { return r.err }

// describe returns a Drive refusal as a refusal, any other error of the
// call named with its name.
func describe(call string, err error) error {
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) || gerr.Code < 400 || gerr.Code >= 500 {
		return fmt.Errorf("%s: %w", call, err)
	}
	r := &refusal{message: gerr.Message, err: gerr}
	if len(gerr.Errors) > 0 {
		r.reason = gerr.Errors[0].Reason
		if r.message == "" {
			r.message = gerr.Errors[0].Message
		}
	}
	if r.message == "" {
		r.message = fmt.Sprintf("%s answered %d", call, gerr.Code)
	}
	return r
}
