package googleclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// credentials turns the configured key file into token sources for the users
// the syncer acts as.
type credentials struct {
	path string
	json []byte
	kind google.CredentialsType
	// tokenClient sends the token requests (retried like every other call).
	tokenClient *http.Client
}

func loadCredentials(path string, tokenClient *http.Client) (*credentials, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read storage.credentialsFile: %w", err)
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("storage.credentialsFile %s: not valid JSON: %w", path, err)
	}
	kind := google.CredentialsType(head.Type)
	if kind != google.ServiceAccount && kind != google.AuthorizedUser {
		return nil, fmt.Errorf("storage.credentialsFile %s: type %q, want %q or %q", path, head.Type, google.ServiceAccount, google.AuthorizedUser)
	}
	return &credentials{path: path, json: data, kind: kind, tokenClient: tokenClient}, nil
}

// tokenSource returns tokens for acting as subject: through domain-wide
// delegation with a service-account key, or as the key's own user with an
// authorized_user key (subject is then not used).
func (c *credentials) tokenSource(subject string, scopes ...string) (oauth2.TokenSource, error) {
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, c.tokenClient)
	params := google.CredentialsParams{Scopes: scopes}
	if c.kind == google.ServiceAccount {
		params.Subject = subject
	}
	creds, err := google.CredentialsFromJSONWithTypeAndParams(ctx, c.json, c.kind, params)
	if err != nil {
		return nil, fmt.Errorf("storage.credentialsFile %s: %w", c.path, err)
	}
	return creds.TokenSource, nil
}

// authorizedUser tells whether the key is an authorized_user one, which acts
// as its own user rather than as each library's storage account.
func (c *credentials) authorizedUser() bool { return c != nil && c.kind == google.AuthorizedUser }
