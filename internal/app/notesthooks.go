//go:build !msgxtesthooks

package app

// testHooks sets the end-to-end tests' failpoints (testhooks.go); msgx itself has none.
func testHooks(*Options) {}
