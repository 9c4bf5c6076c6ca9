//go:build !msgxtesthooks

package main

import "msgx/internal/app"

// testHooks sets the end-to-end tests' failpoints (testhooks.go); msgx itself has none.
func testHooks(*app.Options) {}
