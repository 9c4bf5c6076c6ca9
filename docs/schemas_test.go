package docs_test

import (
	"testing"

	"msgx/docs"
)

// TestSchemasCompile: every file of docs/schemas is NAME.vN.json with that $id, and compiles
// (JSON Schema 2020-12, every $ref resolved among them).
func TestSchemasCompile(t *testing.T) {
	names, err := docs.Names()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 10 {
		t.Fatalf("only %d schemas: %v", len(names), names)
	}
	for _, n := range names {
		if _, err := docs.Schema(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}
