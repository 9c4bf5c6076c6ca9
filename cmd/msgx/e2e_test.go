package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	malformed   = `<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN>`
	unknownType = `<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>500001</SEQN><DTTM>20261201091500</DTTM><TYPE>WXYZ</TYPE><STYP>ADD</STYP></META></MSG>`
	airline = `<?xml version="1.0" encoding="UTF-8"?>
<MSG>
  <META><SNDR>AODB</SNDR><SEQN>500002</SEQN><DTTM>20261201091600</DTTM><TYPE>AIRL</TYPE><STYP>ADD</STYP></META>
  <RECS>1</RECS>
  <AIRL><ITOP>MU</ITOP><ICOP>CES</ICOP><ONAM>CHINA EASTERN</ONAM><ONMC>东方航空</ONMC><CTRY>CN</CTRY>
    <SUBC><CODE>MU-YN</CODE><NAME>YUNNAN</NAME><NAMC>云南</NAMC></SUBC><DORI>I</DORI></AIRL>
</MSG>`
)

func TestEndToEndOverHTTP(t *testing.T) {
	t.Parallel()
	eachDB(t, testEndToEndOverHTTP)
}

func testEndToEndOverHTTP(t *testing.T, db dbEnv) {
	// Short backoff so exhaustion takes about a second of real time.
	// park-classes empty: the retry-then-EXHAUSTED path an UNSUPPORTED message takes when an
	// operator turns parking off.
	fast := []string{"MSGX_PIPELINE_BACKOFF_MS=400,400,400", "MSGX_PIPELINE_MAX_ATTEMPTS=3", "MSGX_PIPELINE_POLL_INTERVAL=50ms", "MSGX_PIPELINE_PARK_CLASSES="}
	a := db.start(t, fast...)

	// One pump per database: a second instance on the same database refuses to start.
	out, err := db.command(t, "serve").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "holds the pump lease") {
		t.Fatalf("second instance: err %v, output:\n%s", err, out)
	}

	bad := a.post(malformed)
	unknown := a.post(unknownType)
	first := a.post(airline)
	dup := a.post(airline)

	a.await(bad, "DEAD/MALFORMED", state("DEAD", "MALFORMED"))
	a.await(unknown, "FAILED/UNSUPPORTED", state("FAILED", "UNSUPPORTED"))
	// Behind the FAILED head, the reference messages wait.
	if m := a.message(first); m.State != "PENDING" {
		t.Fatalf("message behind a FAILED head is %s, want PENDING", m.State)
	}
	if st := a.status(); st.Head == nil || st.Head.ID != unknown || !strings.Contains(st.Head.Why, "UNSUPPORTED") {
		t.Fatalf("status head: %+v", st.Head)
	}

	m := a.await(unknown, "DEAD/EXHAUSTED", state("DEAD", "EXHAUSTED"))
	if m.Attempts != 3 || m.TypeTag == nil || *m.TypeTag != "WXYZ-ADD" {
		t.Fatalf("exhausted message: %+v", m)
	}
	a.await(first, "SUCCEEDED", state("SUCCEEDED", ""))
	d := a.await(dup, "SKIPPED", state("SKIPPED", ""))
	if d.LastError == nil || *d.LastError != fmt.Sprintf("duplicate-of:%d", first) {
		t.Fatalf("duplicate: %+v", d)
	}
	if ref := a.ref("AIRL", "MU"); ref.Fields["ONMC"] != "东方航空" {
		t.Fatalf("AIRL MU: %+v", ref.Fields)
	}

	// SIGTERM stops it cleanly.
	if err := a.stop(); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, a.logs)
	}
	if !strings.Contains(a.logs.String(), `"msg":"msgx stopped"`) {
		t.Fatalf("no clean stop in the log:\n%s", a.logs)
	}

	// An instance without the pump (as production runs a pump-less API node) replays.
	b := db.start(t, "MSGX_PIPELINE_AUTOSTART=false")
	rr, err := b.api().Replay(t.Context(), []string{"EXHAUSTED", "MALFORMED"}, []int64{unknown, bad}, false)
	if err != nil {
		t.Fatal(err)
	}
	if rr.Moved != 1 || rr.Skipped != 1 {
		t.Fatalf("replay answer %+v, want 1 moved, 1 skipped", rr)
	}
	m = b.message(unknown)
	if m.State != "PENDING" || m.Attempts != 0 || m.Class() != "EXHAUSTED" {
		t.Fatalf("replayed message: %+v", m)
	}
	if m := b.message(bad); m.State != "DEAD" || m.Class() != "MALFORMED" {
		t.Fatalf("MALFORMED must stay DEAD: %+v", m)
	}
}

func TestInboxErrors(t *testing.T) {
	t.Parallel()
	eachDB(t, testInboxErrors)
}

func testInboxErrors(t *testing.T, db dbEnv) {
	s := db.start(t, "MSGX_HTTP_MAX_BODY_BYTES=1024")
	cases := []struct {
		name, ctype, body string
		status            int
		code              string
	}{
		{"empty", "application/xml", "", 400, "empty_body"},
		{"media type", "application/json", "{}", 415, "unsupported_media_type"},
		{"too large", "text/xml", strings.Repeat("x", 2048), 413, "too_large"},
		{"bad utf-8", "text/plain", "\xff\xfe<MSG/>", 415, "bad_charset"},
		{"unknown charset", "text/xml; charset=latin-9", "<MSG/>", 415, "bad_charset"},
		// UTF-8 declared as GBK: bytes GBK cannot decode, or the body's own declaration says
		// UTF-8 (UTF-8 Chinese is often also valid GBK and would be stored as other characters).
		{"utf-8 sent as GBK", "text/xml; charset=GBK", "<MSG><A>\u2708 \U0001F6EB</A></MSG>", 415, "bad_charset"},
		{"utf-8 sent as GB18030", "text/xml; charset=GB18030", "<MSG><A>\u2708</A></MSG>", 415, "bad_charset"},
		{"utf-8 declared, GBK claimed", "text/xml; charset=GBK", `<?xml version="1.0" encoding="UTF-8"?><MSG><A>机场</A></MSG>`, 415, "bad_charset"},
		{"broken GBK", "text/xml; charset=GBK", "<MSG><A>\xb6\xab\xd1</A></MSG>", 415, "bad_charset"},
	}
	for _, c := range cases {
		resp, err := http.Post(s.url+"/cminmsgs/send", c.ctype, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error, Code string }
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != c.status || e.Code != c.code || e.Error == "" {
			t.Errorf("%s: %d %+v, want %d %s", c.name, resp.StatusCode, e, c.status, c.code)
		}
	}
	// text/plain in GBK is converted; Accept: application/json gets {"id":N}.
	gbk := []byte("<MSG><META><SNDR>AODB</SNDR><SEQN>3</SEQN><DTTM>20261201091600</DTTM><TYPE>REGL</TYPE><STYP>ADD</STYP></META><RECS>1</RECS><REGL><REGC>EA</REGC><REGN>EAST ASIA</REGN><RGNC>\xb6\xab\xd1\xc7</RGNC></REGL></MSG>")
	req, _ := http.NewRequest("POST", s.url+"/cminmsgs/send", bytes.NewReader(gbk))
	req.Header.Set("Content-Type", "text/plain; charset=GBK")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ok struct{ ID int64 }
	json.NewDecoder(resp.Body).Decode(&ok)
	resp.Body.Close()
	if resp.StatusCode != 200 || ok.ID == 0 {
		t.Fatalf("GBK post: %d %+v", resp.StatusCode, ok)
	}
	s.await(ok.ID, "SUCCEEDED", state("SUCCEEDED", ""))
	if ref := s.ref("REGL", "EA"); ref.Fields["RGNC"] != "东亚" {
		t.Fatalf("GBK text not converted: %+v", ref.Fields)
	}
}

func TestDecodeCommand(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(binary, "decode", "../../testdata/flop/chot.xml").Output()
	if err != nil {
		t.Fatalf("decode a good message: %v\n%s", err, out)
	}
	var got struct {
		TypeTag  string          `json:"type_tag"`
		Identity string          `json:"identity"`
		Body     json.RawMessage `json:"body"`
	}
	if err := json.Unmarshal(out, &got); err != nil || got.TypeTag != "FLOP-CHOT" || !strings.HasPrefix(got.Identity, "AODB|FLOP|CHOT|") || len(got.Body) < 10 {
		t.Fatalf("decode output: %v %s", err, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.xml")
	os.WriteFile(bad, []byte(`<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20261201000000</DTTM><TYPE>FLOP</TYPE><STYP>FDIV</STYP></META>`+
		`<FLOP><FLID>7</FLID><FFID>X</FFID><FDIV DDES="PEK" DDIR="TOO">weather</FDIV></FLOP></MSG>`), 0o644)
	cmd := exec.Command(binary, "decode", bad)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err == nil || !strings.Contains(stderr.String(), "MALFORMED") || !strings.Contains(string(out), `"error_class": "MALFORMED"`) || !strings.Contains(stderr.String(), "TOO") {
		t.Fatalf("decode a bad message: err %v\nstdout %s\nstderr %s", err, out, stderr.String())
	}
}
