// Package openapi embeds the OpenAPI 3.1 document of msgx's ops API and inbox
// (openapi.json, written by internal/api/openapi_gen_test.go), which the server serves at
// GET /api/v1/openapi.json and the end-to-end tests validate every answer against.
package openapi

import _ "embed"

// JSON is the document, openapi.json.
//
//go:embed openapi.json
var JSON []byte
