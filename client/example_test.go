package client_test

import (
	"context"
	"fmt"
	"log"
	"net/url"
	"os"

	"msgx/client"
)

// List the dead letters of one class, then move them back to the queue.
func ExampleClient_Replay() {
	ctx := context.Background()
	c := client.New("http://127.0.0.1:8080", os.Getenv("MSGX_TOKEN"))
	dead, err := c.Messages(ctx, url.Values{"state": {"DEAD"}, "class": {"ORPHAN"}, "limit": {"100"}})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range dead.Messages {
		fmt.Printf("%d %s attempts=%d\n", m.ID, m.Class(), m.Attempts)
	}
	// A dry run says what would move, and what each message would set or leave.
	preview, err := c.Replay(ctx, []string{"ORPHAN"}, nil, true)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("would move %d\n", preview.Moved)
	res, err := c.Replay(ctx, []string{"ORPHAN"}, nil, false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("moved %d: %v\n", res.Moved, res.IDs)
}

// An error answer carries the API's code: a viewer's token may not replay.
func ExampleError() {
	c := client.New("http://127.0.0.1:8080", "a-viewer-token")
	_, err := c.Replay(context.Background(), []string{"ORPHAN"}, nil, false)
	if e, ok := err.(*client.Error); ok && e.Status == 403 {
		fmt.Println("refused:", e.Code)
	}
}
