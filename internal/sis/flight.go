package sis

import (
	"encoding/json"
	"time"
)

// Flight is the record of one flight: every field and group a FLTR carries (docs/sis-format.md §2.4)
// plus everything a FLOP can set (§2.3), under the SIS element names. It is the body of the
// flight store and of the schedule events, so its JSON is part of the interface: each key is
// the SIS element name, optional fields are omitted when they have no value, times are UTC
// (RFC 3339) and groups are lists of the same typed entries that FLTR and FLOP bodies carry,
// so a handler can copy a FLOP's list straight into the record.
//
// No value: a string field is "" and a pointer or list field is nil when the flight has no
// value for it; the three wire forms of an empty element (absent, <X/>, <X></X>) all decode
// to that.
//
// Where the wire forms differ, the record keeps one representation:
//   - PORT: a list of at most one entry per POID (O open, C close), each with its time; the
//     FLTR list and the FLOP PORT entries share the type.
//   - TIPT (tractor in place) and PSHT (push) are not lists of their own: their data lives on
//     the stand-allocation rows (PSDT: TRTM, PSTM, PSID) matched by stand code. A FLTR's single
//     TIPT is folded into the PSDT rows whose PSST is its TRST (ignored when no row matches);
//     FLOP TIPT and PSHT carry rows for the handler to fold the same way.
//   - FDIV, FRET, FLAB: one struct each (attributes by their names, the element text as TEXT);
//     nil when there is no value.
//   - DELY DURA is the duration in minutes (HH×60+MM).
//
// Not on the wire, or not read: a FLTR carries no FFID, so the codec derives it from the
// FLTR's own fields (ALCD-FLNO-MVIN-SODT-FLIN, SODT as ddMMMyyHHmm local time). FLTR ROUT is not decoded: it is
// the route without the home airport in a form the legacy never read, and ERUT carries the
// whole route with typed times. CTOT is not read from a FLTR (only FLOP CTOT sets it), nor
// are PSTM/PSID (FLOP PSHT only).
type Flight struct {
	FLID int64     `json:"FLID"`           // AODB flight id, the key
	FFID string    `json:"FFID,omitempty"` // composite key ALCD-FLNO-MVIN-SODT-FLIN
	ALCD string    `json:"ALCD"`           // airline
	ALSC string    `json:"ALSC,omitempty"` // airline subcompany
	FLNO string    `json:"FLNO"`           // flight number (with airline prefix)
	MVIN string    `json:"MVIN"`           // A arrival, D departure
	SODT time.Time `json:"SODT"`           // scheduled operation time at the home airport (STA/STD)
	FLTY string    `json:"FLTY"`           // flight type (FLTL)
	FLIN string    `json:"FLIN"`           // D domestic, I international, M mixed
	ACFT string    `json:"ACFT"`           // aircraft type, IATA (AIRC)
	RENO string    `json:"RENO,omitempty"` // registration (REGN)

	TAOP string `json:"TAOP,omitempty"` // turnaround (linked) flight: operator
	TAFL string `json:"TAFL,omitempty"` // turnaround flight number
	TAID *int64 `json:"TAID,omitempty"` // turnaround flight FLID
	CSOP string `json:"CSOP,omitempty"` // code-share master: operator
	CSFT string `json:"CSFT,omitempty"` // code-share master: flight number
	MAID *int64 `json:"MAID,omitempty"` // code-share master FLID

	TRML string `json:"TRML,omitempty"` // terminal (TLST)
	MAXP *int16 `json:"MAXP,omitempty"` // maximum passengers
	STND string `json:"STND,omitempty"` // current stand (SLST)
	RUNW string `json:"RUNW,omitempty"` // logical runway, e.g. 02L

	ESTT *time.Time `json:"ESTT,omitempty"` // estimated time
	ACTT *time.Time `json:"ACTT,omitempty"` // actual time

	FHAG *int32 `json:"FHAG,omitempty"` // field/ramp handler (ORGN id)
	PHAG *int32 `json:"PHAG,omitempty"` // passenger handler (ORGN id)
	MHAG *int32 `json:"MHAG,omitempty"` // maintenance handler (ORGN id)

	APPT *time.Time `json:"APPT,omitempty"` // approved (start-up) time
	BOTM *time.Time `json:"BOTM,omitempty"` // boarding open
	CNCL *time.Time `json:"CNCL,omitempty"` // cancellation time: set means cancelled
	EGSR *time.Time `json:"EGSR,omitempty"` // engine-start request
	EGST *time.Time `json:"EGST,omitempty"` // engine start
	FINT *time.Time `json:"FINT,omitempty"` // finals
	LACL *time.Time `json:"LACL,omitempty"` // last call
	COBT *time.Time `json:"COBT,omitempty"` // calculated off-block (A-CDM)
	CTOT *time.Time `json:"CTOT,omitempty"` // calculated take-off (FLOP only)
	EOBT *time.Time `json:"EOBT,omitempty"` // estimated off-block
	TOBT *time.Time `json:"TOBT,omitempty"` // target off-block
	IEST *time.Time `json:"IEST,omitempty"` // internal estimated time
	PEDT *time.Time `json:"PEDT,omitempty"` // estimated departure from the previous station
	PADT *time.Time `json:"PADT,omitempty"` // actual departure from the previous station
	NEAT *time.Time `json:"NEAT,omitempty"` // estimated arrival at the next station
	NAAT *time.Time `json:"NAAT,omitempty"` // actual arrival at the next station

	FDIV *Divert       `json:"FDIV,omitempty"` // diversion
	FRET *AirReturn    `json:"FRET,omitempty"` // return (air or ground)
	FLAB *LandingAbort `json:"FLAB,omitempty"` // aborted landing

	EXSC string `json:"EXSC,omitempty"` // external status code (STTS)
	EXSR string `json:"EXSR,omitempty"` // external status remark
	FTSS string `json:"FTSS,omitempty"` // flight status code (STTS)
	REMC string `json:"REMC,omitempty"` // free-text remark

	VIPP *int16      `json:"VIPP,omitempty"` // number of VIPs
	VIPR *int8       `json:"VIPR,omitempty"` // VIP ranking
	LBNO *int32      `json:"LBNO,omitempty"` // local bag count
	LBWT json.Number `json:"LBWT,omitempty"` // local bag weight (decimal, as sent)
	PAXC *int32      `json:"PAXC,omitempty"` // passenger count

	PORT []Port `json:"PORT,omitempty"` // port open/close times, at most one per POID

	PSDT []StandAlloc   `json:"PSDT,omitempty"` // stand allocations (with push and tractor data)
	GTDT []GateAlloc    `json:"GTDT,omitempty"` // gate allocations
	CHDT []ChuteAlloc   `json:"CHDT,omitempty"` // baggage chute allocations
	CKDT []CounterAlloc `json:"CKDT,omitempty"` // check-in counter allocations
	CLDT []BeltAlloc    `json:"CLDT,omitempty"` // baggage belt (carousel) allocations
	CHOT []Chocks       `json:"CHOT,omitempty"` // chocks on/off
	ABTM []AirbridgeOp  `json:"ABTM,omitempty"` // airbridge operations

	DELY []Delay     `json:"DELY,omitempty"` // delays, keyed by CODE
	ERUT []RouteStop `json:"ERUT,omitempty"` // entire route including the home airport, keyed by RTNO
	SRVT []Service   `json:"SRVT,omitempty"` // handling services, keyed by SRTC
	VIPF []VIP       `json:"VIPF,omitempty"` // VIPs on board, keyed by VPCD
}

// Divert is FDIV, <FDIV DDES= DDIR=>reason</FDIV>: a diversion to or from another airport.
type Divert struct {
	DDES string `json:"DDES"`           // divert airport
	DDIR string `json:"DDIR"`           // TO or FROM
	TEXT string `json:"TEXT,omitempty"` // reason (element text)
}

// AirReturn is FRET, <FRET REID=>reason</FRET>: the flight returned.
type AirReturn struct {
	REID string `json:"REID"`           // A air return, G ground return
	TEXT string `json:"TEXT,omitempty"` // reason (element text)
}

// LandingAbort is FLAB, <FLAB ARES=>reason</FLAB>: the landing was aborted.
type LandingAbort struct {
	ARES string `json:"ARES"`           // O overshoot, G go-around
	TEXT string `json:"TEXT,omitempty"` // reason (element text)
}

// Port is one PORT entry: the port open (POID O) or close (POID C) time. In a record POTM is
// always set; in a FLOP PORT entry a nil POTM clears that time.
type Port struct {
	POID string     `json:"POID"`           // O open, C close
	POTM *time.Time `json:"POTM,omitempty"` // the time
}

// StandAlloc is one PSDT entry, a stand allocation, numbered by PSNO. PSTM/PSID (from FLOP
// PSHT) and TRTM (from FLTR TIPT or FLOP TIPT) are kept on the row of the stand they name.
type StandAlloc struct {
	PSNO int8       `json:"PSNO"`
	PSST string     `json:"PSST,omitempty"` // stand (SLST)
	STST *time.Time `json:"STST,omitempty"` // start
	STET *time.Time `json:"STET,omitempty"` // end
	PSTM *time.Time `json:"PSTM,omitempty"` // push time (PSHT)
	PSID string     `json:"PSID,omitempty"` // push indicator (PSHT)
	TRTM *time.Time `json:"TRTM,omitempty"` // tractor in place (TIPT)
}

// GateAlloc is one GTDT entry, a gate allocation, numbered by GTNO.
type GateAlloc struct {
	GTNO int8       `json:"GTNO"`
	GATE string     `json:"GATE,omitempty"` // gate (GLST)
	PGOT *time.Time `json:"PGOT,omitempty"` // planned open
	PGCT *time.Time `json:"PGCT,omitempty"` // planned close
	GOTM *time.Time `json:"GOTM,omitempty"` // actual open
	GCTM *time.Time `json:"GCTM,omitempty"` // actual close
	GTYP string     `json:"GTYP,omitempty"` // D/I
}

// ChuteAlloc is one CHDT entry, a baggage chute allocation, numbered by CHNO.
type ChuteAlloc struct {
	CHNO int8       `json:"CHNO"`
	CHUT string     `json:"CHUT,omitempty"` // chute (CHLT)
	CCLS string     `json:"CCLS,omitempty"` // class
	PCBT *time.Time `json:"PCBT,omitempty"` // planned begin
	PCET *time.Time `json:"PCET,omitempty"` // planned end
	CBTM *time.Time `json:"CBTM,omitempty"` // actual begin
	CETM *time.Time `json:"CETM,omitempty"` // actual end
	CTYP string     `json:"CTYP,omitempty"` // D/I
}

// CounterAlloc is one CKDT entry, a check-in counter allocation, numbered by CKNO.
type CounterAlloc struct {
	CKNO int8       `json:"CKNO"`
	CHKC string     `json:"CHKC,omitempty"` // counter (CLST)
	CCLS string     `json:"CCLS,omitempty"` // class
	PCOT *time.Time `json:"PCOT,omitempty"` // planned open
	PCCT *time.Time `json:"PCCT,omitempty"` // planned close
	COTM *time.Time `json:"COTM,omitempty"` // actual open
	CCTM *time.Time `json:"CCTM,omitempty"` // actual close
	CTYP string     `json:"CTYP,omitempty"` // D/I
}

// BeltAlloc is one CLDT entry, a baggage belt (carousel) allocation, numbered by CLNO.
type BeltAlloc struct {
	CLNO int8       `json:"CLNO"`
	BELT string     `json:"BELT,omitempty"` // belt (BLST)
	BCLS string     `json:"BCLS,omitempty"` // class
	PCOT *time.Time `json:"PCOT,omitempty"` // planned open
	PCCT *time.Time `json:"PCCT,omitempty"` // planned close
	FBAG *time.Time `json:"FBAG,omitempty"` // first bag
	LBAG *time.Time `json:"LBAG,omitempty"` // last bag
	BTYP string     `json:"BTYP,omitempty"` // D/I
}

// Chocks is one CHOT entry, a chocks-on/off event, numbered by CSNO.
type Chocks struct {
	CSNO int8       `json:"CSNO"`
	CHTM *time.Time `json:"CHTM,omitempty"` // chocks time
	CHID string     `json:"CHID,omitempty"` // ON/OFF (free short text, docs/sis-format.md §5.14)
	CHST string     `json:"CHST,omitempty"` // stand where chocked
}

// AirbridgeOp is one ABTM entry, an airbridge operation, numbered by ASNO.
type AirbridgeOp struct {
	ASNO int8       `json:"ASNO"`
	ABDG string     `json:"ABDG,omitempty"` // airbridge (ABDG)
	ABOP string     `json:"ABOP,omitempty"` // operation (D detach, A attach)
	AOTM *time.Time `json:"AOTM,omitempty"` // operation time
}

// Delay is one DELY entry, <DELY CODE= STRT= DURA=>comment</DELY>, keyed by CODE.
type Delay struct {
	CODE string     `json:"CODE"`           // delay code (DLYL)
	STRT *time.Time `json:"STRT,omitempty"` // start
	DURA *int       `json:"DURA,omitempty"` // duration in minutes (wire HHMM = HH×60+MM)
	TEXT string     `json:"TEXT,omitempty"` // comment (element text)
}

// RouteStop is one ERUT entry, a station of the entire route, keyed by RTNO.
type RouteStop struct {
	RTNO int8       `json:"RTNO"`           // position
	APCD string     `json:"APCD"`           // airport
	SCAT *time.Time `json:"SCAT,omitempty"` // scheduled arrival there
	SCDT *time.Time `json:"SCDT,omitempty"` // scheduled departure there
}

// Service is one SRVT entry, a handling service, keyed by SRTC.
type Service struct {
	SRTC string     `json:"SRTC"`           // service code (HLTR)
	SRQT int8       `json:"SRQT"`           // quantity
	SRST *time.Time `json:"SRST,omitempty"` // start
	SRET *time.Time `json:"SRET,omitempty"` // end
	SRPR *int32     `json:"SRPR,omitempty"` // provider (ORGN id)
	SANR string     `json:"SANR,omitempty"` // abnormal reason (ABNR)
	SARR string     `json:"SARR,omitempty"` // abnormal remark
}

// VIP is one VIPF entry, a VIP on the flight, keyed by VPCD, with its entourage size and the
// VIP's service transactions (VIPT).
type VIP struct {
	VPCD string `json:"VPCD"`           // VIP (VIPL)
	VFES *int16 `json:"VFES,omitempty"` // entourage size
	VIPT []VIPT `json:"VIPT,omitempty"` // services for this VIP
}

// VIPT is one VIP transaction inside a VIPF entry.
type VIPT struct {
	VSCD string     `json:"VSCD"`           // VIP service (VIPS)
	VTQY *int64     `json:"VTQY,omitempty"` // quantity
	VTST *time.Time `json:"VTST,omitempty"` // start
	VTET *time.Time `json:"VTET,omitempty"` // end
}

// StandPush is one FLOP PSHT row, <PSHT PSHN=>PSTM PSID PUST</PSHT>: the push from the stand
// PUST. It updates the PSDT rows of that stand; a nil PSTM clears their push time and
// indicator. PSHN is the sender's row number (the legacy ignores it).
type StandPush struct {
	PSHN *int8      `json:"PSHN,omitempty"`
	PSTM *time.Time `json:"PSTM,omitempty"` // push time
	PSID string     `json:"PSID,omitempty"` // push indicator (free short text, e.g. IN)
	PUST string     `json:"PUST"`           // the stand
}

// StandTractor is one TIPT row, <TIPT>TRTM TRST</TIPT>: the tractor in place at stand TRST.
// It updates the PSDT rows of that stand; a nil TRTM clears their tractor time.
type StandTractor struct {
	TRTM *time.Time `json:"TRTM,omitempty"` // tractor-in-place time
	TRST string     `json:"TRST"`           // the stand
}
