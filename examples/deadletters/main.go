// Command deadletters is a script in a module of its own that uses msgx's public client: it
// lists the dead letters (DEAD messages) of a msgx server, by class, and with -replay CLASS
// moves that class back to the queue. It is the proof that another program can import
// msgx/client; cmd/msgx's TestExampleModuleUsesThePublicClient builds and runs it.
//
//	go run . -server http://msgx:8080 -token "$MSGX_TOKEN"
//	go run . -server http://msgx:8080 -token "$MSGX_TOKEN" -replay ORPHAN
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"sort"

	"msgx/client"
)

func main() {
	server := flag.String("server", "http://127.0.0.1:8080", "msgx's `URL`")
	token := flag.String("token", os.Getenv("MSGX_TOKEN"), "API `token` (viewer to list, operator to replay)")
	replay := flag.String("replay", "", "replay the dead letters of this error `CLASS`")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, client.New(*server, *token), *replay); err != nil {
		fmt.Fprintln(os.Stderr, "deadletters:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c *client.Client, replay string) error {
	byClass := map[string][]int64{}
	q := url.Values{"state": {"DEAD"}, "order": {"asc"}, "limit": {"500"}}
	for {
		page, err := c.Messages(ctx, q)
		if err != nil {
			return err
		}
		for _, m := range page.Messages {
			byClass[m.Class()] = append(byClass[m.Class()], m.ID)
		}
		if page.Next == nil {
			break
		}
		next, err := url.ParseQuery(*page.Next)
		if err != nil {
			return fmt.Errorf("next page %q: %w", *page.Next, err)
		}
		for k, v := range next {
			q[k] = v
		}
	}
	classes := make([]string, 0, len(byClass))
	for cl := range byClass {
		classes = append(classes, cl)
	}
	sort.Strings(classes)
	for _, cl := range classes {
		fmt.Printf("%s\t%d\t%v\n", cl, len(byClass[cl]), byClass[cl])
	}
	if replay == "" {
		return nil
	}
	res, err := c.Replay(ctx, []string{replay}, nil, false)
	if err != nil {
		if e, ok := errors.AsType[*client.Error](err); ok {
			return fmt.Errorf("replay %s refused: %s (%s)", replay, e.Message, e.Code)
		}
		return err
	}
	fmt.Printf("replayed %s: %d moved %v\n", replay, res.Moved, res.IDs)
	return nil
}
