package api

import (
	"net/http"

	"msgx/docs/openapi"
)

// OpenAPIDocument returns the OpenAPI 3.1 document of the ops API and the inbox
// (docs/openapi/openapi.json, embedded), which GET /api/v1/openapi.json serves.
func OpenAPIDocument() []byte { return openapi.JSON }

// openAPIRoute adds GET /api/v1/openapi.json: the document, to every role that may read the
// API (viewer and above, as every GET of /api/v1/…; the routes it lists are no secret, but
// it stays behind the same door as what it describes).
func openAPIRoute(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		if !allowParams(w, r) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Write(openapi.JSON)
	})
}
