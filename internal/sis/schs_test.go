package sis

import (
	"strings"
	"testing"
	"time"

	"msgx/internal/pipeline"
)

const schsFLTR = `<FLTR><ALCD>CA</ALCD><FLNO>CA4102</FLNO><MVIN>A</MVIN><STDT>29MAR26</STDT><EDDT>24OCT26</EDDT>` +
	`<DYOP>1030507</DYOP><SCHT>0915</SCHT><FLTY>W</FLTY><FLIN>I</FLIN><ACFT>333</ACFT></FLTR>`

const schsHead = `<SNAM>Summer</SNAM><APCD>CTU</APCD><SDAT>29MAR26</SDAT><EDAT>24OCT26</EDAT>`

func schsMsg(body string) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?><MSG><META><SNDR>AODB</SNDR><SEQN>900003</SEQN>` +
		`<DTTM>20260301080000</DTTM><TYPE>SCHS</TYPE><STYP>DNLD</STYP></META>` + body + `</MSG>`)
}

func schsOf(head, recs string, fltrs ...string) []byte {
	return schsMsg("<SCHS>" + head + "<RECS>" + recs + "</RECS>" + strings.Join(fltrs, "") + "</SCHS>")
}

func TestSchsDecode(t *testing.T) {
	msg, err := Decode(schsOf(schsHead, "1", strings.Replace(schsFLTR, "<ACFT>333</ACFT>",
		`<ACFT>333</ACFT><ERUT RTNO="1"><APCD>HKG</APCD><SCDT>28MAR260640</SCDT><SDDC>-1</SDDC></ERUT><ERUT RTNO="2"><APCD>CTU</APCD><SCAT>0915</SCAT><SADC>+1</SADC></ERUT>`, 1)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := msg.Body.(*SchsBody)
	if b.SNAM != "Summer" || b.APCD != "CTU" || b.Recs != 1 || b.SDAT.Format(time.RFC3339) != "2026-03-28T16:00:00Z" || b.EDAT.Format(time.RFC3339) != "2026-10-23T16:00:00Z" {
		t.Fatalf("header = %+v", b)
	}
	f := b.Flights[0]
	if f.SCHT != 9*60+15 || f.DYOP != "1030507" || len(f.ERUT) != 2 {
		t.Fatalf("flight = %+v", f)
	}
	if e := f.ERUT[0]; e.SCDT == nil || *e.SCDT != 6*60+40 || e.SDDC != -1 {
		t.Errorf("ERUT[0] (ddMMMyyHHmm form) = %+v", e)
	}
	if e := f.ERUT[1]; e.SCAT == nil || *e.SCAT != 9*60+15 || e.SADC != 1 {
		t.Errorf("ERUT[1] = %+v", e)
	}
}

func TestSchsRejects(t *testing.T) {
	noEDAT := strings.Replace(schsHead, "<EDAT>24OCT26</EDAT>", "", 1)
	tests := []struct {
		name    string
		raw     []byte
		message []string
	}{
		{"missing SCHS", schsMsg("<SNAM>Summer</SNAM><RECS>0</RECS>"), []string{"no <SCHS>"}},
		{"without EDAT", schsOf(noEDAT, "0"), []string{"SCHS/EDAT: missing"}},
		{"empty EDAT", schsOf(noEDAT+"<EDAT/>", "0"), []string{"SCHS/EDAT: missing"}},
		{"EDAT wrong length", schsOf(noEDAT+"<EDAT>24OCT2026</EDAT>", "0"), []string{`SCHS/EDAT "24OCT2026"`, "7 characters"}},
		{"EDAT 11 chars", schsOf(noEDAT+"<EDAT>24OCT260000</EDAT>", "0"), []string{`SCHS/EDAT "24OCT260000"`}},
		{"EDAT before SDAT", schsOf(noEDAT+"<EDAT>01MAR26</EDAT>", "0"), []string{`SCHS/EDAT "01MAR26"`, "before SDAT"}},
		{"without SDAT", schsOf(strings.Replace(schsHead, "<SDAT>29MAR26</SDAT>", "", 1), "0"), []string{"SCHS/SDAT: missing"}},
		{"SDAT day 32", schsOf(strings.Replace(schsHead, "29MAR26", "32MAR26", 1), "0"), []string{`SCHS/SDAT "32MAR26"`, "day 32"}},
		{"without SNAM", schsOf(strings.Replace(schsHead, "<SNAM>Summer</SNAM>", "<SNAM></SNAM>", 1), "0"), []string{"SCHS/SNAM: missing"}},
		{"RECS mismatch", schsOf(schsHead, "2", schsFLTR), []string{"SCHS/RECS 2", "1 FLTR"}},
		{"RECS missing", schsMsg("<SCHS>" + schsHead + schsFLTR + "</SCHS>"), []string{"SCHS/RECS: missing"}},
		{"FLTR without EDDT", schsOf(schsHead, "1", strings.Replace(schsFLTR, "<EDDT>24OCT26</EDDT>", "", 1)), []string{"SCHS FLTR[1] CA CA4102 A EDDT: missing"}},
		{"STDT wrong length", schsOf(schsHead, "1", strings.Replace(schsFLTR, "<STDT>29MAR26</STDT>", "<STDT>29MAR261000</STDT>", 1)), []string{`STDT "29MAR261000"`}},
		{"DYOP length", schsOf(schsHead, "1", strings.Replace(schsFLTR, "1030507", "103050", 1)), []string{`DYOP "103050"`, "7 characters"}},
		{"DYOP digit", schsOf(schsHead, "1", strings.Replace(schsFLTR, "1030507", "1130507", 1)), []string{`DYOP "1130507"`, "position 2"}},
		{"SCHT minute 75", schsOf(schsHead, "1", strings.Replace(schsFLTR, "0915", "0975", 1)), []string{`SCHT "0975"`, "minute 75"}},
		{"SCHT missing", schsOf(schsHead, "1", strings.Replace(schsFLTR, "<SCHT>0915</SCHT>", "", 1)), []string{"SCHT: missing"}},
		{"MVIN bad", schsOf(schsHead, "1", strings.Replace(schsFLTR, "<MVIN>A</MVIN>", "<MVIN>B</MVIN>", 1)), []string{`MVIN "B"`}},
		{"ERUT SCAT", schsOf(schsHead, "1", strings.Replace(schsFLTR, "<ACFT>333</ACFT>", `<ACFT>333</ACFT><ERUT RTNO="1"><APCD>X</APCD><SCAT>915</SCAT></ERUT>`, 1)), []string{`ERUT[1]/SCAT "915"`}},
		{"ERUT SADC", schsOf(schsHead, "1", strings.Replace(schsFLTR, "<ACFT>333</ACFT>", `<ACFT>333</ACFT><ERUT RTNO="1"><APCD>X</APCD><SADC>+-1</SADC></ERUT>`, 1)), []string{`ERUT[1]/SADC "+-1"`}},
		{"ERUT number overflow", schsOf(schsHead, "1", strings.Replace(schsFLTR, "<ACFT>333</ACFT>", `<ACFT>333</ACFT><ERUT RTNO="200"><APCD>X</APCD></ERUT>`, 1)), []string{`ERUT[1]@RTNO "200"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantReject(t, tt.raw, pipeline.Malformed, tt.message...) })
	}
}
