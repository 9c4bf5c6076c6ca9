package inbox_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"msgx/internal/store"
	"msgx/internal/store/storetest"
)

// A traceparent header's trace id is stored with the message (and shown by the API); a
// missing or invalid header stores none.
func TestInboxStoresTheTraceIDOfTraceparent(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ts, _ := newServer(t, db)
		for i, h := range []string{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "", "00-zzz-b7ad6b7169203331-01"} {
			req, _ := http.NewRequest("POST", ts.URL+"/cminmsgs/send", strings.NewReader("<MSG/>"))
			req.Header.Set("Content-Type", "application/xml")
			if h != "" {
				req.Header.Set("traceparent", h)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("post %d: %d", i, resp.StatusCode)
			}
		}
		for id, want := range map[int64]string{1: "0af7651916cd43dd8448eb211c80319c", 2: "", 3: ""} {
			m, err := db.Operations.GetMessage(context.Background(), id)
			if err != nil || m == nil || m.TraceID != want {
				t.Fatalf("message %d: %+v %v, want trace %q", id, m, err, want)
			}
		}
	})
}
