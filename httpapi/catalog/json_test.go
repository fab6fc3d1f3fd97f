package catalog

import (
	"bytes"
	"encoding/json"
)

// reflectJSON encodes a string as the API's answers do.
func reflectJSON(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return string(bytes.TrimSpace(buf.Bytes()))
}
