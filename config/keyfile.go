package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strings"
)

// keyFields are the fields that each type of Google JSON key must have.
var keyFields = map[string][]string{
	"service_account": {"client_email", "private_key"},
	"authorized_user": {"client_id", "client_secret", "refresh_token"},
}

// keyFile adds a problem unless path is a readable Google JSON key of a
// known type with the fields that type needs.
func (ck *checker) keyFile(key, path string) {
	const want = `expected a Google JSON key of "type" "service_account" or "authorized_user"`
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		ck.add(key, "cannot read key file %s: %v; %s", path, err, want)
		return
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			ck.add(key, "key file %s holds a JSON %s, not an object; %s", path, te.Value, want)
		} else {
			ck.add(key, "key file %s is not valid JSON: %v; %s", path, err, want)
		}
		return
	}
	typ, _ := fields["type"].(string)
	need, ok := keyFields[typ]
	if !ok {
		ck.add(key, "key file %s has \"type\" %q; %s", path, typ, want)
		return
	}
	var missing []string
	for _, f := range need {
		if s, _ := fields[f].(string); s == "" {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		ck.add(key, "key file %s (%s) lacks %s; expected non-empty %s", path, typ, strings.Join(missing, ", "), strings.Join(need, ", "))
	}
}
