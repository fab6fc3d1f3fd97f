package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The bounds of push.channelTtl.
const (
	minChannelTTL = 10 * time.Second
	maxChannelTTL = 168 * time.Hour
)

// apiPathRoots are the first segments of the API's own paths
// (httpapi/server.go's routes): push.address's path may not begin with one.
// config cannot import httpapi: TestPushAddressKeepsOffTheRoutes, in
// httpapi, walks the router's routes and fails for a root missing here.
var apiPathRoots = []string{"folder", "domain", "openapi.json"}

// pushAddressExample ends each message about push.address.
const pushAddressExample = "expected the https:// URL at which Google reaches this service's notification path, " +
	"such as https://foldermirror.example.com/drive/push (http:// for emulators and tests), or nothing to poll on the schedule only"

func validatePush(p Push, ck *checker) {
	if p.Address != "" {
		if problem := pushAddressProblem(p.Address); problem != "" {
			ck.add("push.address", "%s; %s", problem, pushAddressExample)
		}
	}
	if p.ChannelTTL < minChannelTTL || p.ChannelTTL > maxChannelTTL {
		ck.add("push.channelTtl", "%s is out of range; expected a duration from %s to %s, such as 24h", p.ChannelTTL, minChannelTTL, "168h")
	}
}

// pushAddressProblem says what is wrong with a push.address, "" if
// nothing: it must be an http or https URL with a host and a path of its
// own on the API listener, which the API's router takes literally.
func pushAddressProblem(address string) string {
	u, err := url.Parse(address)
	switch {
	case err != nil:
		return fmt.Sprintf("is not a URL (%v)", redactURLError(err))
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Sprintf("%q is not an http(s) URL", address)
	case u.Host == "":
		return fmt.Sprintf("%q names no host", address)
	case u.Path == "" || u.Path == "/":
		return fmt.Sprintf("%q has no path; the API listener answers Drive's notifications on a path of their own", address)
	case strings.ContainsAny(u.Path, ":*"):
		return fmt.Sprintf("its path %s holds ':' or '*', which the API's router takes for wildcards", u.Path)
	}
	root, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if slices.Contains(apiPathRoots, root) {
		return fmt.Sprintf("its path %s is among the API's own (those under /%s)", u.Path, strings.Join(apiPathRoots, ", /"))
	}
	return ""
}
