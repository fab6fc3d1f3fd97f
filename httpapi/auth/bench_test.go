package auth_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkAuthenticate measures a request's authentication, each way in:
// warm, a token seen before (cached); cold, a new token (a signature check,
// or for an access token a tokeninfo round trip on loopback).
func BenchmarkAuthenticate(b *testing.B) {
	w := newWorld(b)
	ways := []struct {
		name string
		make func(i int) string
	}{
		{"google-id-token", func(i int) string {
			return "Bearer " + w.fake.GoogleIDToken(googleClient, "alice@example.com", claimN(i))
		}},
		{"microsoft-id-token", func(i int) string {
			return "Bearer " + w.fake.MicrosoftIDToken("2.0", tenant, appID, "bob@example.com", claimN(i))
		}},
		{"google-access-token", func(int) string {
			return "Bearer " + w.fake.GoogleAccessToken(googleClient, "alice@example.com", time.Hour, emailScope)
		}},
		{"security-code", func(int) string { return "securityCode " + aliceCode }},
	}
	for _, way := range ways {
		b.Run(way.name+"/warm", func(b *testing.B) {
			r := request(way.make(0))
			if _, err := w.a.Authenticate(r); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := w.a.Authenticate(r); err != nil {
					b.Fatal(err)
				}
			}
		})
		if way.name == "security-code" {
			continue // nothing to cache: every request hashes the code
		}
		b.Run(way.name+"/cold", func(b *testing.B) {
			reqs := make([]*http.Request, b.N)
			for i := range reqs {
				reqs[i] = request(way.make(i + 1))
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := w.a.Authenticate(reqs[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// claimN makes each token distinct.
func claimN(i int) func(h, c map[string]any) {
	return func(_, c map[string]any) { c["nonce"] = fmt.Sprint(i) }
}

func request(authorization string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/folder/v1/files/x", nil)
	r.Header.Set("Authorization", authorization)
	return r
}
