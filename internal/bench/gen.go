package bench

import (
	"fmt"
	"strings"
	"time"

	"msgx/internal/sis"
)

// The bench writes its own SIS messages (docs/sis-format.md): reference-data adds, FLOP
// operations on the flights of a snapshot, and the snapshot itself. Every message differs
// from every other (SEQN and content), so none is skipped as a duplicate, and every FLOP
// changes its flight, so each one emits events.

// firstFLID is the FLID of the snapshot's first flight.
const firstFLID = 700000

// envelope wraps body in a SIS MSG with its META.
func envelope(seqn int, typ, styp, body string) string {
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>`+
		`<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DTTM>20261201060000</DTTM><TYPE>%s</TYPE><STYP>%s</STYP></META>%s</MSG>`,
		seqn, typ, styp, body)
}

// RefAdd is the i-th reference-data add: flight statuses (STTS) and airlines (AIRL) in turn,
// each with a key of its own.
func RefAdd(i int) string {
	if i%2 == 0 {
		return envelope(100000+i, "STTS", "ADD", fmt.Sprintf(
			`<RECS>1</RECS><STTS><STTC>Q%06d</STTC><STTD>bench status %d</STTD><STDC>状态 %d</STDC><ABNS>N</ABNS></STTS>`, i, i, i))
	}
	code := base36(i, 3)
	return envelope(100000+i, "AIRL", "ADD", fmt.Sprintf(
		`<RECS>1</RECS><AIRL><ITOP>%s</ITOP><ICOP>X%s</ICOP><ONAM>Bench Air %d</ONAM><ONMC>测试航空 %d</ONMC><CTRY>CN</CTRY>`+
			`<TRML MVIN="A" FLIN="D">T2</TRML><OGRP>BENCH</OGRP><DORI>D</DORI></AIRL>`, code, code, i, i))
}

// base36 writes i%36^width as width upper-case base-36 digits.
func base36(i, width int) string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, width)
	for k := width - 1; k >= 0; k-- {
		b[k] = digits[i%36]
		i /= 36
	}
	return string(b)
}

// Schedule is the day and size of the snapshot the FLOP messages refer to.
type Schedule struct {
	Day     time.Time      // local midnight of the flights' day (it must not be in the past)
	Flights int            // how many flights: FLIDs firstFLID … firstFLID+Flights-1
	Loc     *time.Location // the airport's zone (sis.timezone)
}

// sodt is the scheduled time of flight k: spread over the day from 06:00, one every few
// minutes, so that they all stay on Day.
func (s Schedule) sodt(k int) time.Time {
	return s.Day.Add(6*time.Hour + time.Duration(k*17%(17*60))*time.Minute)
}

func (s Schedule) at(t time.Time) string { return sis.FormatDateTime(t, s.Loc) }

// Snapshot is a SCHD DNLD of every flight of the schedule, each FLTR carrying the groups a
// busy airport's record has: stand, gate, three check-in counters, a belt, the route, agents
// and A-CDM times; every tenth flight is a code-share of the one before.
func (s Schedule) Snapshot() string {
	var b strings.Builder
	fmt.Fprintf(&b, `<SCHD><RECS>%d</RECS>`, s.Flights)
	for k := range s.Flights {
		s.fltr(&b, k)
	}
	b.WriteString(`</SCHD>`)
	return envelope(1, "SCHD", "DNLD", b.String())
}

func (s Schedule) fltr(b *strings.Builder, k int) {
	t0 := s.sodt(k)
	t := func(minutes int) string { return s.at(t0.Add(time.Duration(minutes) * time.Minute)) }
	mvin := "A"
	if k%2 == 1 {
		mvin = "D"
	}
	fmt.Fprintf(b, `<FLTR><FLID>%d</FLID><ALCD>MU</ALCD><FLNO>MU%04d</FLNO><MVIN>%s</MVIN><SODT>%s</SODT><FLTY>W</FLTY><FLIN>D</FLIN>`+
		`<ACFT>321</ACFT><RENO>B-%04d</RENO><TRML>T1</TRML><MAXP>186</MAXP><STND>%d</STND><ESTT>%s</ESTT>`,
		firstFLID+k, k, mvin, s.at(t0), 3000+k, 200+k%150, t(3))
	if k%10 == 9 {
		fmt.Fprintf(b, `<CSOP>MU</CSOP><CSFT>MU%04d</CSFT><MAID>%d</MAID>`, k-1, firstFLID+k-1)
	}
	fmt.Fprintf(b, `<PSDT PSNO="1"><PSST>%d</PSST><STST>%s</STST><STET>%s</STET></PSDT>`, 200+k%150, t(-45), t(45))
	fmt.Fprintf(b, `<GTDT GTNO="1"><GATE>C%d</GATE><PGOT>%s</PGOT><PGCT>%s</PGCT><GTYP>D</GTYP></GTDT>`, k%30, t(-50), t(-15))
	for c := 1; c <= 3; c++ {
		fmt.Fprintf(b, `<CKDT CKNO="%d"><CHKC>M%d</CHKC><CCLS>Y</CCLS><PCOT>%s</PCOT><PCCT>%s</PCCT><CTYP>D</CTYP></CKDT>`, c, 20+c, t(-150), t(-45))
	}
	fmt.Fprintf(b, `<CLDT CLNO="1"><BELT>%d</BELT><BCLS>Y</BCLS><PCOT>%s</PCOT><PCCT>%s</PCCT><BTYP>D</BTYP></CLDT>`, 1+k%15, t(8), t(40))
	fmt.Fprintf(b, `<PHAG>2001</PHAG><FHAG>2002</FHAG><MHAG>2003</MHAG><EOBT>%s</EOBT><TOBT>%s</TOBT>`, t(0), t(1))
	fmt.Fprintf(b, `<ERUT RTNO="1"><APCD>SHA</APCD><SCDT>%s</SCDT></ERUT><ERUT RTNO="2"><APCD>CTU</APCD><SCAT>%s</SCAT></ERUT>`, t(-140), t(0))
	fmt.Fprintf(b, `<FTSS>SCH</FTSS><REMC>测试 %d</REMC><RUNW>20R</RUNW></FLTR>`, k)
}

// Flop is the i-th FLOP operation on the schedule's flights, round robin: a stand change, or
// on departures, every other round, a calculated take-off time. A FLOP never repeats the value
// the one before it of its kind set on its flight (for any flight count that is not a multiple
// of 47 or 997, such as SnapshotFlights; TestFlopsAlwaysChangeTheirFlight checks it), so each
// one changes its flight and emits events.
func (s Schedule) Flop(i int) string {
	k := i % s.Flights
	var styp, value string
	if k%2 == 1 && (i/s.Flights)%2 == 0 {
		styp, value = "CTOT", fmt.Sprintf("<CTOT>%s</CTOT>", s.at(s.sodt(k).Add(time.Duration(1+i%47)*time.Minute)))
	} else {
		styp, value = "STND", fmt.Sprintf("<STND>%d</STND>", 400+i%997)
	}
	return envelope(200000+i, "FLOP", styp, fmt.Sprintf(`<FLOP><FLID>%d</FLID><FFID>MU%04d</FFID>%s</FLOP>`, firstFLID+k, k, value))
}
