package sis

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"msgx/internal/pipeline"
)

var updateGolden = flag.Bool("update", false, "rewrite the *.golden.json files of testdata/flop, schd and schs")

// flightTestdata holds the FLOP, SCHD and SCHS test messages and their golden decodings.
const flightTestdata = "../../testdata"

// goldenWarnings are the warnings of the test messages of testdata/{flop,schd,schs} that have
// any, by path below testdata. They are checked here rather than in the golden files, which
// hold the meta and the body.
var goldenWarnings = map[string][]string{
	"schd/adft.xml": {"unknown element HNAG in SCHD FLTR record 1 ignored (did you mean FHAG?)"},
}

// TestDecodeGolden decodes every test message of testdata/{flop,schd,schs} and compares the
// decoded message (its meta and body) with the golden JSON next to it (go test -update
// rewrites them), and its warnings with goldenWarnings.
func TestDecodeGolden(t *testing.T) {
	for _, dir := range []string{"flop", "schd", "schs"} {
		files, err := filepath.Glob(filepath.Join(flightTestdata, dir, "*.xml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no test messages in %s: %v", dir, err)
		}
		for _, file := range files {
			t.Run(dir+"/"+filepath.Base(file), func(t *testing.T) {
				raw, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				msg, err := Decode(raw, Options{})
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if w, want := msg.Warnings, goldenWarnings[dir+"/"+filepath.Base(file)]; !slices.Equal(w, want) {
					t.Errorf("warnings %q, want %q", w, want)
				}
				msg.Warnings = nil
				got, err := json.MarshalIndent(msg, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, '\n')
				golden := strings.TrimSuffix(file, ".xml") + ".golden.json"
				if *updateGolden {
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("decoded %s differs from %s:\n%s", file, golden, got)
				}
			})
		}
	}
}

// TestFlightJSONRoundTrip checks that a decoded record survives the store's JSON unchanged.
func TestFlightJSONRoundTrip(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(flightTestdata, "schd", "dnld.xml"))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := Decode(raw, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range msg.Body.(*SchdBody).Flights {
		b1, _ := json.Marshal(f)
		var back Flight
		if err := json.Unmarshal(b1, &back); err != nil {
			t.Fatalf("FLID %d: %v", f.FLID, err)
		}
		b2, _ := json.Marshal(back)
		if !bytes.Equal(b1, b2) {
			t.Errorf("FLID %d changes in a JSON round trip:\n%s\n%s", f.FLID, b1, b2)
		}
	}
}

// wantReject decodes raw and checks it fails with class and a message holding every part.
func wantReject(t *testing.T, raw []byte, class pipeline.ErrorClass, parts ...string) {
	t.Helper()
	msg, err := Decode(raw, Options{})
	if err == nil {
		b, _ := json.Marshal(msg)
		t.Fatalf("decoded, want %s: %s", class, b)
	}
	if c := pipeline.ClassOf(err); c != class {
		t.Fatalf("class %s, want %s: %v", c, class, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}
