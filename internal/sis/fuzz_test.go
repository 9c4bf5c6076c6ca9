package sis

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"msgx/internal/pipeline"
)

// FuzzDecode feeds arbitrary documents to Decode, seeded with every FLOP, SCHD and SCHS test
// message. Decode must never panic, must classify every failure as MALFORMED, CODEC_ERROR or
// UNSUPPORTED, and a success must be a consistent body that marshals to JSON. Inputs that
// found bugs are kept in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	for _, dir := range []string{"flop", "schd", "schs"} {
		files, _ := filepath.Glob(filepath.Join(flightTestdata, dir, "*.xml"))
		for _, file := range files {
			raw, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(raw)
		}
	}
	f.Add(flopMsg("FDIV", flop7001(`<FDIV DDES="CKG" DDIR="TOO">x</FDIV>`)))
	f.Add(flopMsg("DELY", flop7001(`<DELY CODE="WX" STRT="15MAR261030" DURA="0145"/>`)))
	f.Add(schdOf(1, baseFLTR(7001)))
	f.Add(schsOf(schsHead, "1", schsFLTR))
	f.Add(flopMsg("STND", flop7001(`<STDN>214</STDN><stnd/>`)))
	f.Add(flopMsg("CHOT", flop7001(`<CHOT CSNO="1"><CHTX/><CHTM><X/>15MAR261000</CHTM></CHOT><ZZZZ/>`)))
	f.Add(flopMsg("VIPF", flop7001(`<VIPF><VPCD>V1</VPCD><VSCD/><VIPT><VSCD>L</VSCD><VTST>15MAR260900</VTST><VETT/></VIPT></VIPF>`)))
	f.Add(flopMsg("FDIV", flop7001(`<FDIV DDES="CKG" DDIR="TO"><RSN>fog</RSN></FDIV>`)))
	f.Add(schdOf(3, baseFLTR(7001), baseFLTR(7001), withFLTR("<MVIN>D</MVIN>", "<MVIN>Q</MVIN><NOTE/>")))
	f.Add(refInline("AIRL", `<RECS>2</RECS><AIRL><ITOP>CA</ITOP><SUBC><CODX/></SUBC></AIRL><AIRL><ITOPX/><ONAM><A/></ONAM></AIRL>`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		msg, err := Decode(raw, Options{})
		if err != nil {
			switch c := pipeline.ClassOf(err); c {
			case pipeline.Malformed, pipeline.CodecError, pipeline.Unsupported:
			default:
				t.Fatalf("class %s for %v", c, err)
			}
			return
		}
		switch b := msg.Body.(type) {
		case *FlopBody:
			if len(b.Records) == 0 {
				t.Fatal("FLOP body without records")
			}
			for _, r := range b.Records {
				if r.FLID <= 0 || r.STYP != msg.Meta.STYP {
					t.Fatalf("record %+v", r)
				}
			}
		case *SchdBody:
			n := len(b.Flights) + len(b.Invalid)
			if (b.STYP == "DNLD" || b.STYP == "RESP") && n < b.Recs {
				t.Fatalf("RECS %d, %d FLTR in a replace", b.Recs, n)
			}
			if n > 0 && len(b.Flights) == 0 {
				t.Fatalf("every FLTR invalid, yet decoded: %+v", b.Invalid)
			}
		case *SchsBody:
			if len(b.Flights) < b.Recs {
				t.Fatalf("RECS %d, %d flights", b.Recs, len(b.Flights))
			}
		}
		if len(msg.Warnings) > maxWarnings+1 {
			t.Fatalf("%d warnings", len(msg.Warnings))
		}
		// The body, not the whole message: a META/DTTM of year 0000 is accepted by the envelope
		// and cannot be marshalled (corpus 6f32d8a844b1b725, reported to the envelope's owner).
		if _, err := json.Marshal(msg.Body); err != nil {
			t.Fatalf("marshal: %v", err)
		}
	})
}
