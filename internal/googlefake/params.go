package googlefake

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// boolParam reads a boolean parameter; absent is false.
func boolParam(q url.Values, name string) (bool, *apiError) {
	switch v := q.Get(name); strings.ToLower(v) {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, invalidParam(name)
}

// intParam reads an integer parameter, def when absent. Its bounds (page
// sizes' minimum and maximum) are the discovery check's: it refused a
// request outside them before the method saw it.
func intParam(q url.Values, name string, def int) (int, *apiError) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, invalidParam(name)
	}
	return n, nil
}

// allDrivesParam reads includeItemsFromAllDrives. A request reaching into
// shared drives (reach: driveId set, or corpora drive or allDrives) must set
// it, and a request setting it must also set supportsAllDrives.
func allDrivesParam(q url.Values, reach bool) (bool, *apiError) {
	include, aerr := boolParam(q, "includeItemsFromAllDrives")
	if aerr != nil {
		return false, aerr
	}
	supports, aerr := boolParam(q, "supportsAllDrives")
	switch {
	case aerr != nil:
		return false, aerr
	case reach && !include:
		return false, newAPIError(http.StatusForbidden, "teamDriveIncludeItemsRequired",
			"The includeItemsFromAllDrives parameter must be set to true when driveId is specified or corpora contains drive or allDrives.",
			"includeItemsFromAllDrives")
	case include && !supports:
		return false, newAPIError(http.StatusBadRequest, "invalid",
			"The supportsAllDrives parameter must be set to true when includeItemsFromAllDrives is set to true.",
			"supportsAllDrives")
	}
	return include, nil
}

// driveSpace reads spaces: whether the request covers the "drive" space.
// The fake has no appDataFolder content, so that space is always empty.
func driveSpace(q url.Values) (bool, *apiError) {
	v := q.Get("spaces")
	if v == "" {
		return true, nil
	}
	inDrive := false
	for _, sp := range strings.Split(v, ",") {
		switch strings.TrimSpace(sp) {
		case "drive":
			inDrive = true
		case "appDataFolder":
		default:
			return false, invalidParam("spaces")
		}
	}
	return inDrive, nil
}

// encodePageToken makes an opaque page token resuming after position.
func encodePageToken(kind, position string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1|" + kind + "|" + position))
}

// decodePageToken returns the position of a token made by encodePageToken.
func decodePageToken(kind, token string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", false
	}
	return strings.CutPrefix(string(b), "v1|"+kind+"|")
}
