package syncer

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/foldermirror/foldermirror/googleclient"
	"github.com/foldermirror/foldermirror/internal/drivelist"
	drive "google.golang.org/api/drive/v3"
)

// changePages reads the pages of changes.list in place of the client
// library's decoding (googleclient.WithPageDecoder), as listedPages reads
// those of files.list, with drivelist. A page it takes is valid JSON, and
// nothing it keeps points into it; a page it does not take is the client
// library's to read, as before, once googleclient has checked it.
type changePages struct {
	mu   sync.Mutex
	dec  *drivelist.Decoder
	last *drive.ChangeList // read, not yet taken
	left int               // pages left to the client library
}

func newChangePages() *changePages { return &changePages{dec: drivelist.New()} }

// decode is the listing's googleclient.PageDecoder.
func (c *changePages) decode(body []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	list, err := c.dec.DecodeChanges(body)
	if errors.Is(err, drivelist.ErrInvalid) {
		c.last = nil
		return nil, fmt.Errorf("%w: %w", googleclient.ErrInvalidJSON, err)
	}
	if err != nil {
		c.last = nil
		c.left++
		return nil, err
	}
	c.last = list
	return json.Marshal(&drive.ChangeList{NextPageToken: list.NextPageToken, NewStartPageToken: list.NewStartPageToken, Kind: list.Kind})
}

// take returns the page the client library decoded as list: the one read,
// if it was.
func (c *changePages) take(list *drive.ChangeList) *drive.ChangeList {
	c.mu.Lock()
	defer c.mu.Unlock()
	read := c.last
	c.last = nil
	if read == nil || read.NextPageToken != list.NextPageToken || read.NewStartPageToken != list.NewStartPageToken ||
		len(list.Changes) > 0 {
		return list
	}
	read.ServerResponse = list.ServerResponse
	return read
}
