package sis

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"msgx/internal/pipeline"
)

const refTestdata = "../../testdata/ref"

func refTestDecode(t *testing.T, file string) (*RefBody, error) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(refTestdata, file))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := Decode(raw, Options{})
	if err != nil {
		return nil, err
	}
	body, ok := msg.Body.(*RefBody)
	if !ok {
		t.Fatalf("%s: body is %T, want *RefBody", file, msg.Body)
	}
	return body, nil
}

type refM = map[string]any

func TestRefTypesRegistered(t *testing.T) {
	if len(RefTypes) != 23 || !slices.IsSorted(RefTypes) || len(refSpecs) != 23 {
		t.Fatalf("RefTypes = %v (%d), specs %d; want 23 sorted", RefTypes, len(RefTypes), len(refSpecs))
	}
	for _, typ := range RefTypes {
		spec, ok := refSpecs[typ]
		if _, known := bodyDecoders[typ]; !ok || !IsRefType(typ) || !known {
			t.Errorf("%s: spec %v, IsRefType %v, body decoder %v", typ, ok, IsRefType(typ), known)
			continue
		}
		if _, ok := spec.fields[spec.key]; !ok {
			t.Errorf("%s: key %s is not one of its fields", typ, spec.key)
		}
	}
	for _, typ := range []string{"FLOP", "SCHD", "SCHS", "RQRD", "abdg", ""} {
		if IsRefType(typ) {
			t.Errorf("IsRefType(%q) = true", typ)
		}
	}
}

func TestRefDecode(t *testing.T) {
	tests := []struct {
		file string
		typ  string
		keys []string
		want []refM // Fields per record, in message order
	}{
		{"abdg_dnld.xml", "ABDG", []string{"213", "214"}, []refM{
			{"ABCD": "213", "DESC": "AIRBRIDGE 213", "CDSC": "213号登机桥", "AHGT": 5.5, "ATML": "T2",
				"ATHE": true, "STND": []string{"213", "613"}, "GATE": []string{"G213"}, "AMNO": int64(2)},
			{"ABCD": "214", "DESC": "AIRBRIDGE 214", "CDSC": "214号登机桥", "ATML": "T2", "ATHE": false},
		}},
		{"abnr_add.xml", "ABNR", []string{"WX01"}, []refM{
			{"ANRC": "WX01", "ANRD": "WEATHER AT DESTINATION", "ARDC": "目的地天气原因"},
		}},
		{"airc_add.xml", "AIRC", []string{"333"}, []refM{
			{"ITAT": "333", "ICAT": "A333", "DESC": "AIRBUS A330-300", "CDSC": "空客A330-300", "CHAP": "E",
				"MAXP": int64(301), "MFWT": 45000.0, "MTWT": 242000.0, "ALEN": 63.69, "WSPN": 60.3,
				"MHTM": 90.0, "MABR": int64(2)},
		}},
		{"airc_del.xml", "AIRC", []string{"320"}, []refM{{"ITAT": "320"}}},
		{"airl_add.xml", "AIRL", []string{"CA", "3U"}, []refM{
			{"ITOP": "CA", "ICOP": "CCA", "ONAM": "AIR CHINA", "ONMC": "中国国际航空", "CTRY": "CN",
				"TRML": []map[string]string{
					{"MVIN": "A", "FLIN": "D", "TRML": "T2"},
					{"MVIN": "D", "FLIN": "I", "TRML": "T1"},
				},
				"OGRP": []string{"STAR ALLIANCE", "CNAH"},
				"SUBC": []map[string]string{
					{"CODE": "CA-BJ", "NAME": "BEIJING HEADQUARTERS"},
					{"CODE": "CA-SW", "NAME": "SOUTHWEST BRANCH", "NAMC": "西南分公司"},
				},
				"DORI": "I"},
			{"ITOP": "3U", "ICOP": "CSC", "ONAM": "SICHUAN AIRLINES", "ONMC": "四川航空", "CTRY": "CN",
				"TRML": []map[string]string{{"MVIN": "A", "TRML": "T1"}}, "DORI": "D"},
		}},
		{"arpt_add.xml", "ARPT", []string{"CTU", "FRA"}, []refM{
			{"ITCD": "CTU", "ICCD": "ZUUU", "ANAM": "CHENGDU SHUANGLIU", "ANMC": "成都双流", "BDIS": int64(0),
				"CTRY": "CN", "ACTY": "CTU", "ATYP": "D", "HAUL": "S",
				"ABBR": map[string]string{"ABR1": "蓉", "ABR2": "SHUANGLIU"}},
			{"ITCD": "FRA", "ICCD": "EDDF", "ANAM": "FRANKFURT", "ANMC": "法兰克福", "BDIS": int64(7812),
				"CTRY": "DE", "ACTY": "FRA", "ATYP": "I", "HAUL": "L"},
		}},
		{"blst_add.xml", "BLST", []string{"b14"}, []refM{
			{"BCOD": "b14", "BTNM": "BELT 14", "BNMC": "14号行李转盘", "BCAT": "I", "BTML": "T2"},
		}},
		{"chlt_add.xml", "CHLT", []string{"C07"}, []refM{
			{"CCOD": "C07", "CHNM": "CHUTE 7", "CNMC": "7号滑槽", "CTML": "T1", "CCAT": "D"},
		}},
		{"city_add.xml", "CITY", []string{"CTU", "TEST"}, []refM{
			{"ITCD": "CTU", "ICCD": "ZUUU", "CNAM": "CHENGDU", "CNMC": "成都", "CTRY": "CN",
				"ABBR": map[string]string{"ABR1": "蓉"}},
			{"ITCD": "TEST", "CNAM": "TEST CITY", "CTRY": "CN"},
		}},
		{"clst_add.xml", "CLST", []string{"K101"}, []refM{
			{"CCOD": "K101", "CTNM": "COUNTER K101", "CNMC": "K101值机柜台", "CCAT": "I", "CTML": "T2", "CTRA": true},
		}},
		{"coul_add.xml", "COUL", []string{"CN", "US"}, []refM{
			{"COUC": "CN", "COUN": "CHINA", "CNMC": "中国", "REGC": []string{"AS", "EAS"}},
			{"COUC": "US", "COUN": "UNITED STATES", "CNMC": "美国", "REGC": []string{"NA"}},
		}},
		{"dlyl_add.xml", "DLYL", []string{"PD"}, []refM{
			{"DCOD": "PD", "DCDN": int64(11), "DDES": "LATE CHECK-IN", "DDSC": "旅客晚到"},
		}},
		{"fltl_dnld.xml", "FLTL", []string{"W", "F"}, []refM{
			{"FTYP": "W", "CTYP": "SCH", "FDES": "SCHEDULED PASSENGER", "FDSC": "正班", "FCML": true},
			{"FTYP": "F", "FDES": "FERRY", "FDSC": "调机", "FCML": false},
		}},
		{"glst_add.xml", "GLST", []string{"G213"}, []refM{
			{"GCOD": "G213", "GTNM": "GATE 213", "GNMC": "213登机口", "GCAT": "D", "GTML": "T2", "PIER": "P2"},
		}},
		{"glst_dnld_empty.xml", "GLST", []string{}, []refM{}},
		{"hltr_add.xml", "HLTR", []string{"GPU", "WCHR"}, []refM{
			{"HLTC": "GPU", "HLTD": "GROUND POWER UNIT", "HTDC": "地面电源", "HLTT": "T", "UMNM": "MIN"},
			{"HLTC": "WCHR", "HLTD": "WHEELCHAIR", "HTDC": "轮椅", "HLTT": "Q", "UMNM": "EA"},
		}},
		{"orgn_add.xml", "ORGN", []string{"42"}, []refM{
			{"OGID": int64(42), "ONAM": "CHENGDU GROUND HANDLING", "ONMC": "成都地面服务公司",
				"OCAT": []string{"RAMP HANDLER", "PAX HANDLER"}},
		}},
		{"plst_upd.xml", "PLST", []string{"P2"}, []refM{
			{"PCOD": "P2", "PRNM": "PIER 2", "PNMC": "二号指廊", "PCAT": "D", "PTML": "T2"},
		}},
		{"regl_add.xml", "REGL", []string{"EAS"}, []refM{
			{"REGC": "EAS", "REGN": "EAST ASIA", "RGNC": "东亚"},
		}},
		{"regn_add.xml", "REGN", []string{"B-6516"}, []refM{
			{"RNUM": "B-6516", "ITAT": "333", "OWID": int64(42), "ACAL": "CA", "ALSC": "CA-SW",
				"MAXP": int64(311), "MTWT": 233000.5},
		}},
		{"slst_add.xml", "SLST", []string{"213"}, []refM{
			{"SCOD": "213", "STNM": "STAND 213", "SNMC": "213机位", "SATC": "E", "STGP": "T2W", "SWID": 65.0,
				"SHGT": 76.3, "STML": "T2", "MABS": int64(2), "DIGT": "G213", "DDGT": "G214", "REMT": "N", "FEPU": true},
		}},
		{"stts_add.xml", "STTS", []string{"ONB", "DLY"}, []refM{
			{"STTC": "ONB", "STTD": "ON BLOCK", "STDC": "上轮挡", "ABNS": false},
			{"STTC": "DLY", "STTD": "DELAYED", "STDC": "延误", "ABNS": true},
		}},
		{"tlst_add.xml", "TLST", []string{"T3A"}, []refM{
			{"TCOD": "T3A", "TNAM": "TERMINAL T1", "TNMC": "T1航站楼", "TCAT": "D", "TPAX": true},
		}},
		{"vipl_add.xml", "VIPL", []string{"VIP0001"}, []refM{
			{"VPCD": "VIP0001", "VPNC": "510100198001010011", "VFNM": "明", "VLNM": "李",
				"VDES": "PROVINCIAL DELEGATION", "VDSC": "省代表团", "VPON": "DIRECTOR", "VRNK": "1",
				"VPTC": "王芳", "VCTN": "028-85550000", "VCMN": "13800000000", "VRMK": "NEEDS LOUNGE",
				"VPWU": "四川省政府", "VPPS": "WHEELCHAIR ON ARRIVAL"},
		}},
		{"vips_add.xml", "VIPS", []string{"LNG"}, []refM{
			{"VSCD": "LNG", "VSDS": "VIP LOUNGE", "VSDC": "贵宾休息室", "VSQC": int64(1), "VSUC": "MIN"},
		}},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body, err := refTestDecode(t, tt.file)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if body.Type != tt.typ || body.Recs != len(tt.want) || len(body.Records) != len(tt.want) {
				t.Fatalf("type %s, RECS %d, %d records; want %s, %d, %d",
					body.Type, body.Recs, len(body.Records), tt.typ, len(tt.want), len(tt.want))
			}
			for i, rec := range body.Records {
				if rec.Key != tt.keys[i] {
					t.Errorf("record %d: key %q, want %q", i+1, rec.Key, tt.keys[i])
				}
				if !reflect.DeepEqual(rec.Fields, map[string]any(tt.want[i])) {
					got, _ := json.Marshal(rec.Fields)
					want, _ := json.Marshal(tt.want[i])
					t.Errorf("record %d fields:\n got %s\nwant %s\n(got %#v)", i+1, got, want, rec.Fields)
				}
			}
			if _, err := json.Marshal(body); err != nil {
				t.Errorf("json.Marshal: %v", err)
			}
		})
		covered[tt.typ] = true
	}
	for _, typ := range RefTypes {
		if !covered[typ] {
			t.Errorf("no test message for %s", typ)
		}
	}
}

func TestRefDecodeEmptyListJSON(t *testing.T) {
	body, err := refTestDecode(t, "glst_dnld_empty.xml")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(body)
	if want := `{"type":"GLST","RECS":0,"records":[]}`; string(got) != want {
		t.Errorf("json = %s, want %s", got, want)
	}
}

func TestRefDecodeNumbersJSON(t *testing.T) {
	body, err := refTestDecode(t, "airc_add.xml")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(body.Records[0].Fields)
	for _, want := range []string{`"MFWT":45000,`, `"WSPN":60.3}`, `"MAXP":301,`, `"MABR":2,`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("json %s lacks %s", got, want)
		}
	}
}

func TestRefDecodeJSONDeterministic(t *testing.T) {
	a, err := refTestDecode(t, "json_a.xml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := refTestDecode(t, "json_b.xml")
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("same content, different JSON:\n%s\n%s", ja, jb)
	}
	for range 5 { // map iteration order must not leak into the output
		again, _ := json.Marshal(a)
		if !bytes.Equal(ja, again) {
			t.Fatalf("json.Marshal not stable:\n%s\n%s", ja, again)
		}
	}
	want := `{"type":"AIRL","RECS":1,"records":[{"key":"CA","fields":{"ITOP":"CA","OGRP":["STAR ALLIANCE"],` +
		`"ONAM":"AIR CHINA","ONMC":"中国国际航空","SUBC":[{"CODE":"CA-BJ","NAME":"BEIJING"},{"CODE":"CA-SW","NAME":"SOUTHWEST"}],` +
		`"TRML":[{"FLIN":"D","MVIN":"A","TRML":"T2"},{"FLIN":"I","MVIN":"D","TRML":"T1"}]}}]}`
	if string(ja) != want {
		t.Errorf("json:\n got %s\nwant %s", ja, want)
	}
}

func TestRefDecodeRejects(t *testing.T) {
	mf, ce := pipeline.Malformed, pipeline.CodecError
	tests := []struct {
		file  string
		class pipeline.ErrorClass
		want  []string // substrings of the error message
	}{
		{"reject_recs_missing.xml", mf, []string{"RECS is missing", "1 ABNR records"}},
		{"reject_recs_nonnumeric.xml", mf, []string{"RECS", `"two"`, "2 STTS records"}},
		{"reject_recs_wrong_name.xml", mf, []string{"RECS 1", "only 0 REGN records"}}, // a DNLD: truncated
		{"reject_ogid.xml", mf, []string{"ORGN record 1", "OGID", `"CGH"`}},
		{"reject_amno.xml", mf, []string{"ABDG record 1", `ABCD="215"`, "AMNO", `"200"`, "8-bit"}},
		{"reject_flag.xml", mf, []string{"CLST record 1", `CCOD="K103"`, "CTRA", `"X"`}},
		{"reject_abbr_code.xml", mf, []string{"ARPT record 1", `ITCD="PEK"`, "ABBR", "CODE"}},
		{"reject_trml_mvin.xml", mf, []string{"AIRL record 1", `ITOP="MU"`, "TRML@MVIN", `"Z"`}},
		{"reject_subc_code.xml", mf, []string{`ITOP="MU"`, "SUBC 1", "CODE"}},
		{"reject_subc_dup.xml", mf, []string{`ITOP="MU"`, "SUBC CODE", `"MU-YN"`}},
		{"reject_decimal.xml", mf, []string{`ITAT="320"`, "MTWT", `"78,000"`}},
		{"reject_maxp.xml", mf, []string{`RNUM="B-1234"`, "MAXP", `"40000"`, "16-bit"}},
		{"reject_haul.xml", mf, []string{`ITCD="PEK"`, "HAUL", `"M"`}},
		{"reject_dori.xml", mf, []string{`ITOP="MU"`, "DORI", `"X"`}},
		{"reject_nested_text.xml", ce, []string{"BLST record 1", "BTNM", "<EN>"}},
		{"reject_conflict.xml", mf, []string{`TCOD="T1"`, "TNAM", "more than once"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body, err := refTestDecode(t, tt.file)
			if err == nil {
				t.Fatalf("Decode succeeded: %+v", body)
			}
			if c := pipeline.ClassOf(err); c != tt.class {
				t.Errorf("class %s, want %s (%v)", c, tt.class, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}

// A reference message survives its bad records: they are listed in Invalid with their index,
// key (when readable), class and reason; the good ones are decoded.
func TestRefInvalidRecords(t *testing.T) {
	body, err := refTestDecode(t, "reject_key_missing.xml")
	if err != nil {
		t.Fatal(err)
	}
	if len(body.Records) != 1 || len(body.Invalid) != 1 {
		t.Fatalf("body = %+v", body)
	}
	if v := body.Invalid[0]; v.Index != 2 || v.Key != "" || v.Class != pipeline.Malformed || !strings.Contains(v.Reason, "CCOD") {
		t.Errorf("invalid = %+v", v)
	}
	body, err = refTestDecode(t, "reject_key_dup.xml") // the later record with a used key is the invalid one
	if err != nil {
		t.Fatal(err)
	}
	if v := body.Invalid; len(v) != 1 || v[0].Index != 2 || v[0].Key != "G213" || !strings.Contains(v[0].Reason, "records 1 and 2") {
		t.Errorf("invalid = %+v", v)
	}
	for _, tt := range []struct {
		name, body string
		records    []string
		invalid    []Invalid // Reason: a substring
	}{
		{"key kept for a bad value", `<RECS>3</RECS><TLST><TCOD>T1</TCOD></TLST><TLST><TCOD>T2</TCOD><TPAX>YES</TPAX></TLST><TLST><TCOD>T3</TCOD></TLST>`,
			[]string{"T1", "T3"}, []Invalid{{2, "T2", pipeline.Malformed, `TPAX "YES"`}}},
		{"nested element is a codec error", `<RECS>2</RECS><BLST><BCOD>B1</BCOD><BTNM><EN>x</EN></BTNM></BLST><BLST><BCOD>B2</BCOD></BLST>`,
			[]string{"B2"}, []Invalid{{1, "B1", pipeline.CodecError, "<EN>"}}},
		{"unreadable key", `<RECS>2</RECS><ORGN><OGID>X1</OGID></ORGN><ORGN><OGID>7</OGID></ORGN>`,
			[]string{"7"}, []Invalid{{1, "", pipeline.Malformed, `OGID "X1"`}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			typ := tt.body[strings.Index(tt.body, "</RECS><")+8:][:4]
			msg, err := Decode(refInline(typ, tt.body), Options{})
			if err != nil {
				t.Fatal(err)
			}
			b := msg.Body.(*RefBody)
			var keys []string
			for _, r := range b.Records {
				keys = append(keys, r.Key)
			}
			if !slices.Equal(keys, tt.records) || len(b.Invalid) != len(tt.invalid) {
				t.Fatalf("records %v invalid %+v", keys, b.Invalid)
			}
			for i, w := range tt.invalid {
				g := b.Invalid[i]
				if g.Index != w.Index || g.Key != w.Key || g.Class != w.Class || !strings.Contains(g.Reason, w.Reason) {
					t.Errorf("invalid %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
	// Every record invalid: the message fails, naming the first ones.
	_, err = Decode(refInline("TLST", `<RECS>5</RECS>`+strings.Repeat(`<TLST><TPAX>Q</TPAX></TLST>`, 5)), Options{})
	if pipeline.ClassOf(err) != pipeline.Malformed || !strings.Contains(err.Error(), "every TLST record") || !strings.Contains(err.Error(), "and 2 more") {
		t.Errorf("all invalid: %v", err)
	}
	// … as a CODEC_ERROR when one of them is one (a later decoder could accept it).
	_, err = Decode(refInline("BLST", `<RECS>2</RECS><BLST/><BLST><BCOD>B1</BCOD><BTNM><EN>x</EN></BTNM></BLST>`), Options{})
	if pipeline.ClassOf(err) != pipeline.CodecError {
		t.Errorf("all invalid, one a codec error: %v", err)
	}
}

// RECS (docs/sis-format.md §2.1): fewer records than RECS in a replace (DNLD, RESP) is MALFORMED; any
// other mismatch is accepted with a warning. Invalid records count as records.
func TestRefRecs(t *testing.T) {
	rec := `<ABNR><ANRC>X</ANRC></ABNR>`
	bad := `<ABNR><ANRC>Y</ANRC><ANRC>Z</ANRC></ABNR>`
	for _, tt := range []struct {
		styp, body string
		fail       bool
		warning    string
	}{
		{"DNLD", `<RECS>2</RECS>` + rec, true, ""},
		{"RESP", `<RECS>2</RECS>` + rec, true, ""},
		{"DNLD", `<RECS>1</RECS>` + rec + bad, false, "ABNR/RECS 1: the message holds 2 ABNR records"},
		{"DNLD", `<RECS>2</RECS>` + rec + bad, false, ""},
		{"ADD", `<RECS>2</RECS>` + rec, false, "ABNR/RECS 2: the message holds 1 ABNR records"},
		{"DEL", `<RECS>0</RECS>` + rec, false, "ABNR/RECS 0"},
		{"UPD", `<RECS>3</RECS>` + rec, false, "ABNR/RECS 3"},
	} {
		raw := []byte(strings.Replace(string(refInline("ABNR", tt.body)), "<STYP>ADD<", "<STYP>"+tt.styp+"<", 1))
		msg, err := Decode(raw, Options{})
		if tt.fail {
			if pipeline.ClassOf(err) != pipeline.Malformed || !strings.Contains(err.Error(), "truncated") {
				t.Errorf("%s %s: %v, want MALFORMED", tt.styp, tt.body, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", tt.styp, tt.body, err)
			continue
		}
		got := strings.Join(msg.Warnings, "|")
		if (tt.warning == "") != (got == "") || !strings.Contains(got, tt.warning) {
			t.Errorf("%s %s: warnings %q, want %q", tt.styp, tt.body, got, tt.warning)
		}
	}
}

// Any STYP is decoded for a reference TYPE (the handler upserts the unknown ones).
func TestRefAnySTYP(t *testing.T) {
	for _, styp := range []string{"ADD", "UPD", "DEL", "DNLD", "RESP", "MOD", "INS", "CHG", "SYNC"} {
		raw := []byte(strings.Replace(string(refInline("ABNR", `<RECS>1</RECS><ABNR><ANRC>X</ANRC></ABNR>`)), "<STYP>ADD<", "<STYP>"+styp+"<", 1))
		msg, err := Decode(raw, Options{})
		if err != nil {
			t.Errorf("%s: %v", styp, err)
			continue
		}
		if b := msg.Body.(*RefBody); msg.Meta.STYP != styp || len(b.Records) != 1 || b.Records[0].Key != "X" {
			t.Errorf("%s: %+v", styp, b)
		}
	}
}

// Unknown elements in a reference message are read past and reported.
func TestRefWarnings(t *testing.T) {
	msg, err := Decode(refInline("AIRL", `<RECS>1</RECS><XTRA/><AIRL><ITOP>CA</ITOP><itop>ca</itop><ONAMX>A</ONAMX>`+
		`<SUBC><CODE>CA-1</CODE><CODX/></SUBC></AIRL>`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"unknown element XTRA in MSG ignored",
		"unknown element itop in AIRL record 1 ignored (did you mean ITOP?)",
		"unknown element ONAMX in AIRL record 1 ignored (did you mean ONAM?)",
		"unknown element CODX in AIRL record 1 SUBC ignored",
	}
	if !slices.Equal(msg.Warnings, want) {
		t.Errorf("warnings\n got %q\nwant %q", msg.Warnings, want)
	}
}

// refInline builds a reference message around body for the small cases below.
func refInline(typ, body string) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?><MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN>` +
		`<DTTM>20240315083000</DTTM><TYPE>` + typ + `</TYPE><STYP>ADD</STYP></META>` + body + `</MSG>`)
}

func TestRefDecodeValues(t *testing.T) {
	tests := []struct {
		name, typ, body string
		field           string
		want            any // nil: field absent
		errPart         string
	}{
		{"decimal trailing zeros", "AIRC", "<AIRC><ITAT>320</ITAT><ALEN>37.570</ALEN></AIRC>", "ALEN", 37.57, ""},
		{"decimal no integer part", "AIRC", "<AIRC><ITAT>320</ITAT><ALEN>.5</ALEN></AIRC>", "ALEN", 0.5, ""},
		{"decimal negative zero", "AIRC", "<AIRC><ITAT>320</ITAT><ALEN>-0.0</ALEN></AIRC>", "ALEN", 0.0, ""},
		{"decimal exponent", "AIRC", "<AIRC><ITAT>320</ITAT><ALEN>1e3</ALEN></AIRC>", "", nil, "ALEN"},
		{"decimal NaN", "AIRC", "<AIRC><ITAT>320</ITAT><ALEN>NaN</ALEN></AIRC>", "", nil, "ALEN"},
		{"int8 max", "SLST", "<SLST><SCOD>1</SCOD><MABS>127</MABS></SLST>", "MABS", int64(127), ""},
		{"int8 min", "VIPS", "<VIPS><VSCD>X</VSCD><VSQC>-128</VSQC></VIPS>", "VSQC", int64(-128), ""},
		{"int8 over", "VIPS", "<VIPS><VSCD>X</VSCD><VSQC>128</VSQC></VIPS>", "", nil, "VSQC"},
		{"int16 max", "DLYL", "<DLYL><DCOD>PD</DCOD><DCDN>32767</DCDN></DLYL>", "DCDN", int64(32767), ""},
		{"int16 over", "DLYL", "<DLYL><DCOD>PD</DCOD><DCDN>32768</DCDN></DLYL>", "", nil, "DCDN"},
		{"int decimal", "AIRC", "<AIRC><ITAT>320</ITAT><MAXP>180.0</MAXP></AIRC>", "", nil, "MAXP"},
		{"int32 key over", "ORGN", "<ORGN><OGID>2147483648</OGID></ORGN>", "", nil, "OGID"},
		{"int64", "ARPT", "<ARPT><ITCD>X</ITCD><BDIS>9223372036854775807</BDIS></ARPT>", "BDIS", int64(9223372036854775807), ""},
		{"int64 over", "ARPT", "<ARPT><ITCD>X</ITCD><BDIS>9223372036854775808</BDIS></ARPT>", "", nil, "BDIS"},
		{"owid not numeric", "REGN", "<REGN><RNUM>B-1</RNUM><OWID>CGH</OWID></REGN>", "", nil, "OWID"},
		{"flag lower case", "TLST", "<TLST><TCOD>T1</TCOD><TPAX>y</TPAX></TLST>", "TPAX", true, ""},
		{"flag word", "TLST", "<TLST><TCOD>T1</TCOD><TPAX>YES</TPAX></TLST>", "", nil, "TPAX"},
		{"flag empty", "TLST", "<TLST><TCOD>T1</TCOD><TPAX></TPAX></TLST>", "TPAX", nil, ""},
		{"flag self-closing", "TLST", "<TLST><TCOD>T1</TCOD><TPAX/></TLST>", "TPAX", nil, ""},
		{"flag whitespace", "TLST", "<TLST><TCOD>T1</TCOD><TPAX> N </TPAX></TLST>", "TPAX", false, ""},
		{"text trimmed", "BLST", "<BLST><BCOD>B1</BCOD><BTNM>\n\t BELT 1 \n</BTNM></BLST>", "BTNM", "BELT 1", ""},
		{"text whitespace only", "BLST", "<BLST><BCOD>B1</BCOD><BTNM>  </BTNM></BLST>", "BTNM", nil, ""},
		{"text entity", "BLST", "<BLST><BCOD>B1</BCOD><BTNM>A &amp; B</BTNM></BLST>", "BTNM", "A & B", ""},
		{"text cdata", "BLST", "<BLST><BCOD>B1</BCOD><BTNM><![CDATA[<1>]]></BTNM></BLST>", "BTNM", "<1>", ""},
		{"same value twice", "BLST", "<BLST><BCOD>B1</BCOD><BTML>T1</BTML><BTML>T1</BTML></BLST>", "BTML", "T1", ""},
		{"empty then value", "BLST", "<BLST><BCOD>B1</BCOD><BTML/><BTML>T1</BTML></BLST>", "BTML", "T1", ""},
		{"decimal same value twice", "AIRC", "<AIRC><ITAT>320</ITAT><ALEN>12.5</ALEN><ALEN>12.50</ALEN></AIRC>", "ALEN", 12.5, ""},
		{"key only for every STYP", "SLST", "<SLST><SCOD>213</SCOD></SLST>", "SCOD", "213", ""},
		{"key with unknown attribute", "SLST", `<SLST X="1"><SCOD Y="2">213</SCOD></SLST>`, "SCOD", "213", ""},
		{"key whitespace", "SLST", "<SLST><SCOD>   </SCOD></SLST>", "", nil, "SCOD"},
		{"key twice differing", "SLST", "<SLST><SCOD>213</SCOD><SCOD>214</SCOD></SLST>", "", nil, "SCOD"},
		{"abbr empty CODE", "CITY", `<CITY><ITCD>PEK</ITCD><ABBR CODE="">京</ABBR></CITY>`, "", nil, "ABBR"},
		{"abbr CODE conflict", "CITY", `<CITY><ITCD>PEK</ITCD><ABBR CODE="ABR1">京</ABBR><ABBR CODE="ABR1">燕</ABBR></CITY>`, "", nil, "ABR1"},
		{"abbr other code kept", "CITY", `<CITY><ITCD>PEK</ITCD><ABBR CODE="ABR9">京</ABBR></CITY>`, "ABBR", map[string]string{"ABR9": "京"}, ""},
		{"trml FLIN M", "AIRL", `<AIRL><ITOP>CA</ITOP><TRML MVIN="A" FLIN="M">T2</TRML></AIRL>`, "", nil, "TRML@FLIN"},
		{"trml lower case", "AIRL", `<AIRL><ITOP>CA</ITOP><TRML mvin="x" MVIN="d">T2</TRML></AIRL>`, "TRML", []map[string]string{{"MVIN": "D", "TRML": "T2"}}, ""},
		{"trml empty", "AIRL", `<AIRL><ITOP>CA</ITOP><TRML/></AIRL>`, "TRML", nil, ""},
		{"subc empty parts", "AIRL", `<AIRL><ITOP>CA</ITOP><SUBC><CODE>X</CODE><NAME/><NAMC></NAMC></SUBC></AIRL>`, "SUBC", []map[string]string{{"CODE": "X"}}, ""},
		{"subc nested element", "AIRL", `<AIRL><ITOP>CA</ITOP><SUBC><CODE><A/></CODE></SUBC></AIRL>`, "", nil, "SUBC/CODE"},
		{"list all empty", "ABDG", `<ABDG><ABCD>1</ABCD><STND/><STND></STND><STND> </STND></ABDG>`, "STND", nil, ""},
		{"record deep unknown", "ABNR", `<ABNR><ANRC>X</ANRC><Q><Q><Q><ANRD>no</ANRD></Q></Q></Q></ABNR>`, "ANRD", nil, ""},
		{"unknown MSG child", "ABNR", `<XXXX><ABNR><ANRC>Y</ANRC></ABNR></XXXX><RECS>1</RECS><ABNR><ANRC>X</ANRC></ABNR>`, "ANRC", "X", ""},
		{"other TYPE record ignored", "ABNR", `<RECS>1</RECS><BLST><BCOD>B</BCOD></BLST><ABNR><ANRC>X</ANRC></ABNR>`, "ANRC", "X", ""},
		{"RECS twice", "ABNR", `<RECS>1</RECS><RECS>1</RECS><ABNR><ANRC>X</ANRC></ABNR>`, "", nil, "RECS"},
		{"RECS empty", "ABNR", `<RECS/><ABNR><ANRC>X</ANRC></ABNR>`, "", nil, "RECS"},
		{"RECS negative", "ABNR", `<RECS>-1</RECS><ABNR><ANRC>X</ANRC></ABNR>`, "", nil, "RECS"},
		{"RECS huge", "ABNR", `<RECS>99999999999999999999999</RECS><ABNR><ANRC>X</ANRC></ABNR>`, "", nil, "RECS"},
		{"RECS inside record is not RECS", "ABNR", `<ABNR><RECS>1</RECS><ANRC>X</ANRC></ABNR>`, "", nil, "RECS is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			if !strings.Contains(body, "<RECS") {
				body = "<RECS>1</RECS>" + body
			}
			msg, err := Decode(refInline(tt.typ, body), Options{})
			if tt.errPart != "" {
				if err == nil {
					t.Fatalf("Decode succeeded: %+v", msg.Body)
				}
				want := pipeline.Malformed
				if tt.name == "subc nested element" {
					want = pipeline.CodecError // an element inside a simple one: a structure SIS does not describe
				}
				if c := pipeline.ClassOf(err); c != want {
					t.Errorf("class %s, want %s (%v)", c, want, err)
				}
				if !strings.Contains(err.Error(), tt.errPart) {
					t.Errorf("error %q does not name %s", err, tt.errPart)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			rec := msg.Body.(*RefBody).Records[0]
			got, ok := rec.Fields[tt.field]
			if tt.want == nil {
				if ok {
					t.Errorf("%s = %#v, want absent", tt.field, got)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s = %#v, want %#v", tt.field, got, tt.want)
			}
		})
	}
}

// FuzzRefDecode checks that no input makes the reference decoder panic, that every failure
// is classified as bad input, and that every success encodes to JSON.
func FuzzRefDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(refTestdata, "*.xml"))
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		msg, err := Decode(raw, Options{})
		if err != nil {
			switch pipeline.ClassOf(err) {
			case pipeline.Malformed, pipeline.CodecError, pipeline.Unsupported:
			default:
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		body, ok := msg.Body.(*RefBody)
		if !ok {
			return // another TYPE's body
		}
		n := len(body.Records) + len(body.Invalid)
		if (msg.Meta.STYP == "DNLD" || msg.Meta.STYP == "RESP") && n < body.Recs {
			t.Fatalf("%s: RECS %d, %d records", msg.Meta.STYP, body.Recs, n)
		}
		if n > 0 && len(body.Records) == 0 {
			t.Fatalf("every record invalid, yet decoded: %+v", body.Invalid)
		}
		if _, err := json.Marshal(body); err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
	})
}
