package httpapi

import (
	"crypto/sha256"
	_ "embed" // the OpenAPI document
	"encoding/hex"
	"net/http"

	"github.com/gin-gonic/gin"
)

// openAPIDocument is the OpenAPI 3.1 description of the API's operations:
// the machine-readable contract, served at /openapi.json. The tests check
// every answer of every operation against it.
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPIETag is the document's entity tag: it changes with the document,
// which changes only with the binary.
var openAPIETag = func() string {
	sum := sha256.Sum256(openAPIDocument)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}()

// openAPICacheControl lets clients and proxies keep the document a few
// minutes: replicas of different versions behind one address (an upgrade
// under way) are told apart within that time, and the ETag makes checking
// again cheap.
const openAPICacheControl = "public, max-age=300"

// getOpenAPI answers the OpenAPI document, to anyone: it says nothing that
// the API's documentation does not.
func (s *Server) getOpenAPI(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("ETag", openAPIETag)
	h.Set("Cache-Control", openAPICacheControl)
	if matches(c.GetHeader("If-None-Match"), openAPIETag) {
		c.AbortWithStatus(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", openAPIDocument)
}
