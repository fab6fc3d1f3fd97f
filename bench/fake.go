package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/oauth2/google"
	"google.golang.org/api/drive/v3"
)

// fakePages is how many files.list pages fakeFigures times.
const fakePages = 5

// syncListFields are the fields the full sync asks of files.list (see
// syncer/reader.go).
const syncListFields = "nextPageToken,files(id,name,mimeType,parents,trashed,resourceKey,appProperties,copyRequiresWriterPermission," +
	"downloadRestrictions(itemDownloadRestriction(restrictedForReaders)),writersCanShare,hasAugmentedPermissions," +
	"inheritedPermissionsDisabled,permissions(id,type,role,emailAddress,domain,displayName,photoLink,allowFileDiscovery,deleted))"

// fakeFigures measures the fake itself, so that the notes can tell what
// part of a figure is the fake's: the time it takes to answer a page of
// 1,000 folders of the library, with their parents and permissions, as the
// full sync asks (the first pages, without added latency, over loopback,
// read to the end). It returns a description with the build time.
func (h *hosted) fakeFigures(ctx context.Context, built time.Duration) (string, error) {
	creds, err := google.CredentialsFromJSONWithTypeAndParams(ctx, h.fake.ServiceAccountKey(serviceAccount), google.ServiceAccount,
		google.CredentialsParams{Scopes: []string{drive.DriveReadonlyScope}, Subject: storageAccount})
	if err != nil {
		return "", err
	}
	tok, err := creds.TokenSource.Token()
	if err != nil {
		return "", err
	}
	q := url.Values{"pageSize": {"1000"}, "corpora": {"user"}, "supportsAllDrives": {"true"}, "fields": {syncListFields},
		"q": {"mimeType = 'application/vnd.google-apps.folder' and trashed = false"}}
	var total time.Duration
	var size int
	pages := 0
	for ; pages < fakePages; pages++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.fake.DriveEndpoint()+"files?"+q.Encode(), nil)
		if err != nil {
			return "", err
		}
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		total += time.Since(start)
		if err != nil || resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("files.list of the fake: %s %w: %s", resp.Status, err, tail(string(body), 300))
		}
		size += len(body)
		var page struct{ NextPageToken string }
		if err := json.Unmarshal(body, &page); err != nil {
			return "", err
		}
		if page.NextPageToken == "" {
			pages++
			break
		}
		q.Set("pageToken", page.NextPageToken)
	}
	return fmt.Sprintf("was built in %.1f s and answers a files.list page of 1,000 folders with parents and permissions (%s bytes) in %.1f ms (mean of the first %d, no latency added)",
		built.Seconds(), thousands(float64(size/pages)), ms(total)/float64(pages), pages), nil
}
