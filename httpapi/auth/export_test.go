package auth

import "time"

// SetKeyFetchBackoff makes the Authenticator that o makes retry failed
// fetches of signing keys after min, then twice as long each time up to
// max, instead of after a second up to a minute: a test of key servers
// that fail waits milliseconds for the retries.
func SetKeyFetchBackoff(o *Options, minWait, maxWait time.Duration) {
	o.keyFetchRetry = backoff{minWait, maxWait}
}
