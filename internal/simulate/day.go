package simulate

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"msgx/internal/pipeline"
)

// The airport's world: made up for the simulation (codes in the IATA style), one terminal
// pair, contact and remote stands, gates, belts and counters.

type airline struct{ iata, icao, name, local, country string }

var airlines = []airline{
	{"CA", "CCA", "Air China", "中国国际航空", "CN"},
	{"MU", "CES", "China Eastern", "东方航空", "CN"},
	{"CZ", "CSN", "China Southern", "南方航空", "CN"},
	{"3U", "CSC", "Sichuan Airlines", "四川航空", "CN"},
	{"HU", "CHH", "Hainan Airlines", "海南航空", "CN"},
	{"EU", "UEA", "Chengdu Airlines", "成都航空", "CN"},
	{"TV", "TBA", "Tibet Airlines", "西藏航空", "CN"},
	{"SQ", "SIA", "Singapore Airlines", "新加坡航空", "SG"},
	{"TG", "THA", "Thai Airways", "泰国国际航空", "TH"},
	{"KE", "KAL", "Korean Air", "大韩航空", "KR"},
}

type airport struct {
	iata, icao, name, local, country string
	intl                             bool
	minutes                          int // flying time from home
}

var airports = []airport{
	{"PEK", "ZBAA", "Beijing Capital", "北京首都", "CN", false, 160},
	{"PVG", "ZSPD", "Shanghai Pudong", "上海浦东", "CN", false, 170},
	{"CAN", "ZGGG", "Guangzhou Baiyun", "广州白云", "CN", false, 130},
	{"SZX", "ZGSZ", "Shenzhen Bao'an", "深圳宝安", "CN", false, 140},
	{"KMG", "ZPPP", "Kunming Changshui", "昆明长水", "CN", false, 80},
	{"XIY", "ZLXY", "Xi'an Xianyang", "西安咸阳", "CN", false, 85},
	{"HGH", "ZSHC", "Hangzhou Xiaoshan", "杭州萧山", "CN", false, 150},
	{"LXA", "ZULS", "Lhasa Gonggar", "拉萨贡嘎", "CN", false, 120},
	{"URC", "ZWWW", "Urumqi Diwopu", "乌鲁木齐地窝堡", "CN", false, 230},
	{"CKG", "ZUCK", "Chongqing Jiangbei", "重庆江北", "CN", false, 55},
	{"SIN", "WSSS", "Singapore Changi", "新加坡樟宜", "SG", true, 290},
	{"BKK", "VTBS", "Bangkok Suvarnabhumi", "曼谷素万那普", "TH", true, 200},
	{"ICN", "RKSI", "Seoul Incheon", "首尔仁川", "KR", true, 250},
	{"HKG", "VHHH", "Hong Kong", "香港", "CN", true, 150},
}

type aircraft struct {
	iata, icao, name string
	seats            int
}

var fleet = []aircraft{
	{"319", "A319", "Airbus A319", 128},
	{"320", "A320", "Airbus A320", 158},
	{"321", "A321", "Airbus A321", 190},
	{"738", "B738", "Boeing 737-800", 164},
	{"7M8", "B38M", "Boeing 737 MAX 8", 172},
	{"333", "A333", "Airbus A330-300", 301},
	{"359", "A359", "Airbus A350-900", 312},
	{"789", "B789", "Boeing 787-9", 284},
}

type delayCode struct{ code, text, local string }

var delayCodes = []delayCode{
	{"WX", "weather", "天气"},
	{"ATC", "air traffic flow control", "流量控制"},
	{"TEC", "technical", "机械故障"},
	{"CRW", "crew", "机组"},
	{"PAX", "passengers", "旅客"},
	{"RA", "late inbound aircraft", "前序航班晚到"},
}

type status struct {
	code, text, local string
	abnormal          bool
}

var statuses = []status{
	{"SCH", "scheduled", "计划", false},
	{"DLY", "delayed", "延误", true},
	{"BRD", "boarding", "登机", false},
	{"DEP", "departed", "起飞", false},
	{"FNL", "final approach", "进近", false},
	{"ARR", "arrived", "到达", false},
	{"CNL", "cancelled", "取消", true},
	{"DIV", "diverted", "备降", true},
}

// contactStands have a gate of their own (101 → A01); remote stands board by bus (C gates).
var (
	contactStands = numbered("", 101, 140)
	remoteStands  = numbered("", 201, 236)
	busGates      = numbered("C", 1, 12)
	belts         = numbered("", 1, 12)
	counters      = numbered("K", 1, 80)
)

func numbered(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		if prefix == "" {
			out = append(out, fmt.Sprint(i))
		} else {
			out = append(out, fmt.Sprintf("%s%02d", prefix, i))
		}
	}
	return out
}

// gateOf is the gate that serves a contact stand; a remote stand's passengers take a bus.
func (g *gen) gateOf(stand string) string {
	var n int
	fmt.Sscan(stand, &n)
	switch {
	case n >= 101 && n <= 120:
		return fmt.Sprintf("A%02d", n-100)
	case n >= 121 && n <= 140:
		return fmt.Sprintf("B%02d", n-120)
	}
	return g.pick(busGates)
}

func terminalOf(gate string) string {
	if strings.HasPrefix(gate, "B") {
		return "T2"
	}
	return "T1"
}

// reference sends the reference data a day's traffic refers to, one full replacement (DNLD)
// per TYPE.
func (g *gen) reference(at time.Time) {
	rec := func(typ string, n int, body string) {
		g.add(at, typ+"-DNLD", 0, fmt.Sprintf("<RECS>%d</RECS>\n%s", n, body))
		at = at.Add(10 * time.Second)
	}
	var b strings.Builder
	for _, a := range airlines {
		fmt.Fprintf(&b, "<AIRL><ITOP>%s</ITOP><ICOP>%s</ICOP><ONAM>%s</ONAM><ONMC>%s</ONMC><CTRY>%s</CTRY><DORI>%s</DORI></AIRL>\n",
			a.iata, a.icao, xmlText(a.name), a.local, a.country, map[bool]string{true: "D", false: "I"}[a.country == "CN"])
	}
	rec("AIRL", len(airlines), b.String())
	b.Reset()
	for _, a := range airports {
		fmt.Fprintf(&b, "<ARPT><ITCD>%s</ITCD><ICCD>%s</ICCD><ANAM>%s</ANAM><ANMC>%s</ANMC><CTRY>%s</CTRY><ATYP>%s</ATYP></ARPT>\n",
			a.iata, a.icao, xmlText(a.name), a.local, a.country, map[bool]string{true: "I", false: "D"}[a.intl])
	}
	rec("ARPT", len(airports), b.String())
	b.Reset()
	for _, a := range fleet {
		fmt.Fprintf(&b, "<AIRC><ITAT>%s</ITAT><ICAT>%s</ICAT><DESC>%s</DESC><MAXP>%d</MAXP></AIRC>\n", a.iata, a.icao, a.name, a.seats)
	}
	rec("AIRC", len(fleet), b.String())
	b.Reset()
	stands := append(append([]string(nil), contactStands...), remoteStands...)
	for _, s := range stands {
		remote := "N"
		if s[0] == '2' {
			remote = "Y"
		}
		fmt.Fprintf(&b, "<SLST><SCOD>%s</SCOD><STNM>STAND %s</STNM><SNMC>%s机位</SNMC><STML>%s</STML><REMT>%s</REMT></SLST>\n",
			s, s, s, terminalOf(g.gateOf(s)), remote)
	}
	rec("SLST", len(stands), b.String())
	b.Reset()
	var gates []string
	for i := 1; i <= 20; i++ {
		gates = append(gates, fmt.Sprintf("A%02d", i), fmt.Sprintf("B%02d", i))
	}
	gates = append(gates, busGates...)
	sort.Strings(gates)
	for _, gt := range gates {
		fmt.Fprintf(&b, "<GLST><GCOD>%s</GCOD><GTNM>GATE %s</GTNM><GNMC>%s登机口</GNMC><GTML>%s</GTML></GLST>\n", gt, gt, gt, terminalOf(gt))
	}
	rec("GLST", len(gates), b.String())
	b.Reset()
	for _, bl := range belts {
		fmt.Fprintf(&b, "<BLST><BCOD>%s</BCOD><BTNM>BELT %s</BTNM><BNMC>%s号转盘</BNMC></BLST>\n", bl, bl, bl)
	}
	rec("BLST", len(belts), b.String())
	b.Reset()
	for _, c := range counters {
		fmt.Fprintf(&b, "<CLST><CCOD>%s</CCOD><CTNM>COUNTER %s</CTNM><CNMC>%s值机柜台</CNMC></CLST>\n", c, c, c)
	}
	rec("CLST", len(counters), b.String())
	b.Reset()
	for _, d := range delayCodes {
		fmt.Fprintf(&b, "<DLYL><DCOD>%s</DCOD><DDES>%s</DDES><DDSC>%s</DDSC></DLYL>\n", d.code, d.text, d.local)
	}
	rec("DLYL", len(delayCodes), b.String())
	b.Reset()
	for _, s := range statuses {
		fmt.Fprintf(&b, "<STTS><STTC>%s</STTC><STTD>%s</STTD><STDC>%s</STDC><ABNS>%s</ABNS></STTS>\n",
			s.code, s.text, s.local, map[bool]string{true: "Y", false: "N"}[s.abnormal])
	}
	rec("STTS", len(statuses), b.String())
	rec("FLTL", 1, "<FLTL><FTYP>W</FTYP><CTYP>SCH</CTYP><FDES>scheduled passenger</FDES><FDSC>定期客运</FDSC><FCML>Y</FCML></FLTL>\n")
}

// flights makes the schedule: turnarounds (an arrival and the departure of the same aircraft
// an hour or two later) spread over the day, a few cancelled or diverted, and their delays.
func (g *gen) flights() {
	n := g.opt.Flights
	var out []Flight
	used := map[string]bool{}
	number := func(al string) int {
		for {
			k := 1000 + g.rnd.IntN(8999)
			k -= k % 2
			if !used[fmt.Sprint(al, k)] {
				used[fmt.Sprint(al, k)] = true
				return k
			}
		}
	}
	spanMin := int(g.opt.Span / time.Minute)
	for len(out) < n {
		al := airlines[g.rnd.IntN(len(airlines))]
		ap := airports[g.rnd.IntN(len(airports))]
		intl := ap.intl || al.country != "CN"
		ac := fleet[g.rnd.IntN(len(fleet))]
		reg := fmt.Sprintf("B-%d%03d", 1+g.rnd.IntN(9), g.rnd.IntN(1000))
		stand := g.pick(contactStands)
		if g.chance(0.35) {
			stand = g.pick(remoteStands)
		}
		k := number(al.iata)
		arrAt := g.day.Add(g.opt.First + time.Duration(g.rnd.IntN(max(spanMin, 1))/5*5)*time.Minute)
		turn := time.Duration(45+g.rnd.IntN(16)*5) * time.Minute
		base := Flight{Airline: al.iata, Intl: intl, Aircraft: ac.iata, Reg: reg, Stand: stand, Gate: g.gateOf(stand), Other: ap.iata}
		arr := base
		arr.Arrival, arr.Number, arr.SODT, arr.Delay = true, fmt.Sprintf("%s%d", al.iata, k+1), arrAt, g.delay()
		dep := base
		dep.Number, dep.SODT, dep.Delay = fmt.Sprintf("%s%d", al.iata, k), arrAt.Add(turn), g.delay()
		// A late inbound aircraft delays its departure when the turnaround cannot absorb it.
		if late := arr.Delay - (turn - 40*time.Minute); late > dep.Delay {
			dep.Delay = late.Round(5 * time.Minute)
		}
		switch {
		case g.chance(0.02):
			arr.Cancelled, dep.Cancelled = true, true
		case g.chance(0.012):
			arr.Diverted = airports[g.rnd.IntN(len(airports))].iata
			dep.Cancelled = true
		}
		if n-len(out) == 1 {
			out = append(out, dep)
			break
		}
		out = append(out, arr, dep)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SODT.Before(out[j].SODT) })
	index := map[string]int{}
	for i := range out {
		out[i].FLID = g.flidBase + int64(i) + 1
		index[out[i].Number+out[i].mvin()] = i
	}
	// Link the legs of each turnaround by FLID.
	for i := range out {
		f := &out[i]
		var k int
		fmt.Sscan(f.Number[len(f.Airline):], &k)
		other := f.Airline + fmt.Sprint(k-1) + "D"
		if !f.Arrival {
			other = f.Airline + fmt.Sprint(k+1) + "A"
		}
		if j, ok := index[other]; ok {
			f.Turn = out[j].FLID
		}
	}
	g.fl = out
}

// delay draws how late a flight is: mostly on time, a quarter somewhat late, a few very.
func (g *gen) delay() time.Duration {
	switch r := g.rnd.Float64(); {
	case r < 0.65:
		return time.Duration(g.rnd.IntN(10)) * time.Minute
	case r < 0.92:
		return time.Duration(15+g.rnd.IntN(7)*5) * time.Minute
	default:
		return time.Duration(50+g.rnd.IntN(9)*5) * time.Minute
	}
}

// flightByID finds a flight of the schedule.
func (g *gen) flightByID(flid int64) *Flight {
	i := int(flid - g.flidBase - 1)
	if i < 0 || i >= len(g.fl) {
		return nil
	}
	return &g.fl[i]
}

// schedule sends the day's SCHD DNLD with every flight.
func (g *gen) schedule(at time.Time) {
	var b strings.Builder
	fmt.Fprintf(&b, "<SCHD><RECS>%d</RECS>\n", len(g.fl))
	for _, f := range g.fl {
		t := func(x time.Time) string { return sisTime(x, g.loc) }
		fmt.Fprintf(&b, "<FLTR><FLID>%d</FLID><ALCD>%s</ALCD><FLNO>%s</FLNO><MVIN>%s</MVIN><SODT>%s</SODT><FLTY>W</FLTY><FLIN>%s</FLIN>",
			f.FLID, f.Airline, f.Number, f.mvin(), t(f.SODT), f.flin())
		ap := airportOf(f.Other)
		if f.Arrival {
			fmt.Fprintf(&b, `<ROUT RTNO="1"><APCD>%s</APCD><SCDT>%s</SCDT></ROUT>`, f.Other, t(f.SODT.Add(-time.Duration(ap.minutes)*time.Minute)))
		} else {
			fmt.Fprintf(&b, `<ROUT RTNO="1"><APCD>%s</APCD><SCAT>%s</SCAT></ROUT>`, f.Other, t(f.SODT.Add(time.Duration(ap.minutes)*time.Minute)))
		}
		fmt.Fprintf(&b, "<ACFT>%s</ACFT><RENO>%s</RENO>", f.Aircraft, f.Reg)
		if f.Turn != 0 {
			o := g.flightByID(f.Turn)
			fmt.Fprintf(&b, "<TAOP>%s</TAOP><TAFL>%s</TAFL><TAID>%d</TAID>", o.Airline, o.Number, o.FLID)
		}
		fmt.Fprintf(&b, "<TRML>%s</TRML><MAXP>%d</MAXP><STND>%s</STND>", terminalOf(f.Gate), seatsOf(f.Aircraft), f.Stand)
		from, to := f.SODT.Add(-10*time.Minute), f.SODT.Add(40*time.Minute)
		if !f.Arrival {
			from, to = f.SODT.Add(-50*time.Minute), f.SODT.Add(10*time.Minute)
		}
		fmt.Fprintf(&b, `<PSDT PSNO="1"><PSST>%s</PSST><STST>%s</STST><STET>%s</STET></PSDT>`, f.Stand, t(from), t(to))
		b.WriteString("</FLTR>\n")
	}
	b.WriteString("</SCHD>\n")
	g.add(at, "SCHD-DNLD", 0, b.String())
}

func airportOf(iata string) airport {
	for _, a := range airports {
		if a.iata == iata {
			return a
		}
	}
	return airports[0]
}

func seatsOf(iata string) int {
	for _, a := range fleet {
		if a.iata == iata {
			return a.seats
		}
	}
	return 150
}

// flop queues a FLOP of styp for f at time at with payload (the elements after FLID, FFID).
func (g *gen) flop(f *Flight, at time.Time, styp, payload string) *pending {
	return g.add(at, "FLOP-"+styp, f.FLID, fmt.Sprintf("<FLOP><FLID>%d</FLID><FFID>%s</FFID>%s</FLOP>\n", f.FLID, f.ffid(g.loc), payload))
}

// timeOp queues a FLOP whose payload is one time element named like its STYP.
func (g *gen) timeOp(f *Flight, at time.Time, styp string, value time.Time) {
	g.flop(f, at, styp, fmt.Sprintf("<%s>%s</%s>", styp, sisTime(value, g.loc), styp))
}

func (g *gen) status(f *Flight, at time.Time, code string) {
	g.flop(f, at, "FTSS", "<FTSS>"+code+"</FTSS>")
}

// operations queues what the day does to f, each at the time the AODB would send it.
func (g *gen) operations(f *Flight) {
	t := func(x time.Time) string { return sisTime(x, g.loc) }
	s, d := f.SODT, f.Delay
	block := s.Add(d) // on or off block
	min := func(m int) time.Duration { return time.Duration(m) * time.Minute }
	if f.Cancelled {
		at := s.Add(-min(60 + g.rnd.IntN(60)))
		g.timeOp(f, at, "CNCL", at)
		g.status(f, at.Add(time.Minute), "CNL")
		return
	}
	// A stand change for one flight in ten, an hour before.
	if g.chance(0.1) {
		stand := g.pick(remoteStands)
		if stand == f.Stand {
			stand = g.pick(contactStands)
		}
		f.Stand, f.Gate = stand, g.gateOf(stand)
		at := s.Add(-min(70))
		from, to := block.Add(-min(10)), block.Add(min(40))
		if !f.Arrival {
			from, to = block.Add(-min(50)), block.Add(min(10))
		}
		g.flop(f, at, "PSDT", fmt.Sprintf(`<PSDT PSNO="1"><PSST>%s</PSST><STST>%s</STST><STET>%s</STET></PSDT>`, stand, t(from), t(to)))
		g.flop(f, at.Add(10*time.Second), "STND", "<STND>"+stand+"</STND>")
	}
	if f.Arrival {
		g.arrival(f)
		return
	}
	g.departure(f)
}

// arrival queues an arrival's operations: the previous station's departure, a delay, a
// diversion or the approach, chocks on and the baggage belt.
func (g *gen) arrival(f *Flight) {
	t := func(x time.Time) string { return sisTime(x, g.loc) }
	s, d := f.SODT, f.Delay
	block := s.Add(d) // on or off block
	min := func(m int) time.Duration { return time.Duration(m) * time.Minute }
	fly := min(airportOf(f.Other).minutes)
	if fly > min(90) {
		fly = min(90) // the previous station's departure is reported at most 90 minutes ahead
	}
	offPrev := block.Add(-fly)
	g.timeOp(f, offPrev.Add(2*time.Minute), "PADT", offPrev)
	if d >= 15*time.Minute {
		g.timeOp(f, offPrev.Add(5*time.Minute), "IEST", block)
		g.status(f, offPrev.Add(5*time.Minute+10*time.Second), "DLY")
	}
	if f.Diverted != "" {
		at := block.Add(-min(25))
		g.flop(f, at, "FDIV", fmt.Sprintf(`<FDIV DDES="%s" DDIR="TO">天气低于标准 below minima</FDIV>`, f.Diverted))
		g.status(f, at.Add(time.Minute), "DIV")
		return
	}
	g.timeOp(f, block.Add(-min(8)), "FINT", block.Add(-min(8)))
	g.flop(f, block, "CHOT", fmt.Sprintf(`<CHOT CSNO="1"><CHTM>%s</CHTM><CHID>ON</CHID><CHST>%s</CHST></CHOT>`, t(block), f.Stand))
	g.status(f, block.Add(time.Minute), "ARR")
	belt := g.pick(belts)
	cldt := func(at time.Time, first, last string) {
		g.flop(f, at, "CLDT", fmt.Sprintf(`<CLDT CLNO="1"><BELT>%s</BELT><BCLS>Y</BCLS><PCOT>%s</PCOT><PCCT>%s</PCCT><FBAG>%s</FBAG><LBAG>%s</LBAG><BTYP>%s</BTYP></CLDT>`,
			belt, t(block.Add(min(10))), t(block.Add(min(40))), first, last, f.flin()))
	}
	cldt(block.Add(min(3)), "", "")
	cldt(block.Add(min(33)), t(block.Add(min(12))), t(block.Add(min(33))))
}

// departure queues a departure's operations: check-in, the gate, a delay, TOBT/CTOT,
// boarding, last call, chocks off and the next station's arrival estimate.
func (g *gen) departure(f *Flight) {
	t := func(x time.Time) string { return sisTime(x, g.loc) }
	s, d := f.SODT, f.Delay
	block := s.Add(d) // on or off block
	min := func(m int) time.Duration { return time.Duration(m) * time.Minute }
	k := g.rnd.IntN(len(counters) - 1)
	g.flop(f, s.Add(-min(120)), "CKDT", fmt.Sprintf(`<CKDT CKNO="1"><CHKC>%s</CHKC><CCLS>Y</CCLS><PCOT>%s</PCOT><PCCT>%s</PCCT><CTYP>%s</CTYP></CKDT>`+
		`<CKDT CKNO="2"><CHKC>%s</CHKC><CCLS>Y</CCLS><PCOT>%s</PCOT><PCCT>%s</PCCT><CTYP>%s</CTYP></CKDT>`,
		counters[k], t(s.Add(-min(120))), t(s.Add(-min(40))), f.flin(), counters[k+1], t(s.Add(-min(120))), t(s.Add(-min(40))), f.flin()))
	gtdt := func(at time.Time, gate, open, closed string) {
		g.flop(f, at, "GTDT", fmt.Sprintf(`<GTDT GTNO="1"><GATE>%s</GATE><PGOT>%s</PGOT><PGCT>%s</PGCT><GOTM>%s</GOTM><GCTM>%s</GCTM><GTYP>%s</GTYP></GTDT>`,
			gate, t(block.Add(-min(40))), t(block.Add(-min(10))), open, closed, f.flin()))
	}
	gtdt(s.Add(-min(90)), f.Gate, "", "")
	if d >= 15*time.Minute {
		code := delayCodes[g.rnd.IntN(len(delayCodes))]
		if f.Turn != 0 {
			if in := g.flightByID(f.Turn); in != nil && in.Delay > 15*time.Minute {
				code = delayCodes[len(delayCodes)-1] // late inbound aircraft
			}
		}
		at := s.Add(-min(60))
		m := int(d / time.Minute)
		g.flop(f, at, "DELY", fmt.Sprintf(`<DELY CODE="%s" STRT="%s" DURA="%02d%02d">%s</DELY>`, code.code, t(s), m/60, m%60, code.local))
		g.timeOp(f, at.Add(10*time.Second), "EOBT", block)
		g.status(f, at.Add(20*time.Second), "DLY")
		if g.chance(0.1) && f.Gate[0] != 'C' {
			f.Gate = g.pick(busGates)
			gtdt(s.Add(-min(30)), f.Gate, "", "")
		}
	}
	g.timeOp(f, s.Add(-min(50)), "TOBT", block)
	if g.chance(0.2) {
		g.timeOp(f, block.Add(-min(40)), "CTOT", block.Add(min(15)))
	}
	gtdt(block.Add(-min(40)), f.Gate, t(block.Add(-min(40))), "")
	g.timeOp(f, block.Add(-min(35)), "BOTM", block.Add(-min(35)))
	g.status(f, block.Add(-min(35)+10*time.Second), "BRD")
	g.timeOp(f, block.Add(-min(15)), "LACL", block.Add(-min(15)))
	gtdt(block.Add(-min(10)), f.Gate, t(block.Add(-min(40))), t(block.Add(-min(10))))
	g.flop(f, block, "CHOT", fmt.Sprintf(`<CHOT CSNO="1"><CHTM>%s</CHTM><CHID>OFF</CHID><CHST>%s</CHST></CHOT>`, t(block), f.Stand))
	g.status(f, block.Add(min(12)), "DEP")
	g.timeOp(f, block.Add(min(15)), "NEAT", block.Add(min(airportOf(f.Other).minutes+12)))
}

// faults mixes the faults of the options into the stream between from and to.
func (g *gen) faults(from, to time.Time) {
	var flops []int // indexes of the plain FLOPs made so far
	for i, p := range g.msgs {
		if strings.HasPrefix(p.Tag, "FLOP-") && p.Fault == "" {
			flops = append(flops, i)
		}
	}
	if len(flops) == 0 {
		return
	}
	count := max(1, int(math.Round(g.opt.FaultRate*float64(len(flops)))))
	when := func() time.Time {
		return from.Add(time.Duration(g.rnd.Int64N(int64(to.Sub(from)) + 1)))
	}
	anyFlight := func() *Flight { return &g.fl[g.rnd.IntN(len(g.fl))] }
	for _, fault := range g.opt.Faults {
		for i := range count {
			var p *pending
			switch fault {
			case Malformed:
				p = g.malformed(i, flops, when)
				p.Expect = Expect{State: pipeline.Dead, Class: pipeline.Malformed}
			case Orphan:
				f := *anyFlight()
				f.FLID = g.flidBase + 5_000_000 + int64(i) + 1
				p = g.flop(&f, when(), "STND", "<STND>"+g.pick(remoteStands)+"</STND>")
				p.Expect = Expect{State: pipeline.Dead, Class: pipeline.Orphan}
			case UnknownSTYP:
				f := anyFlight()
				at := when()
				p = g.flop(f, at, "ESTT", "<ESTT>"+sisTime(f.SODT.Add(f.Delay), g.loc)+"</ESTT>")
				p.Expect = Expect{State: pipeline.Dead, Class: pipeline.Unsupported}
			case DuplicateSEQN:
				orig := g.msgs[flops[g.rnd.IntN(len(flops))]]
				p = g.add(orig.At.Add(time.Duration(1+g.rnd.IntN(30))*time.Minute), orig.Tag, orig.FLID, "")
				p.dupOf = orig.order
				p.Expect = Expect{State: pipeline.Skipped}
			}
			p.Fault = fault
		}
	}
}

// misspelt are FLOP STYPs whose payload element is named like the STYP, so renaming it leaves
// the record without its own element and with one SIS does not define.
var misspelt = map[string]bool{"STND": true, "BOTM": true, "LACL": true, "CHOT": true, "GTDT": true, "FINT": true, "TOBT": true}

// malformed makes the i-th malformed message, in turn: a FLOP cut off in the middle, one whose
// payload element is misspelt, and a diversion in a direction SIS does not have.
func (g *gen) malformed(i int, flops []int, when func() time.Time) *pending {
	switch i % 3 {
	case 0:
		orig := g.msgs[flops[g.rnd.IntN(len(flops))]]
		body := string(orig.Body)
		return g.add(when(), orig.Tag, orig.FLID, body[:len(body)/2])
	case 1:
		for range 1000 {
			orig := g.msgs[flops[g.rnd.IntN(len(flops))]]
			styp := strings.TrimPrefix(orig.Tag, "FLOP-")
			if !misspelt[styp] {
				continue
			}
			wrong := styp[:2] + styp[3:] + styp[2:3] // STND → STDN
			body := strings.ReplaceAll(strings.ReplaceAll(string(orig.Body), "<"+styp, "<"+wrong), "</"+styp+">", "</"+wrong+">")
			return g.add(when(), orig.Tag, orig.FLID, body)
		}
	}
	f := &g.fl[g.rnd.IntN(len(g.fl))]
	return g.flop(f, when(), "FDIV", `<FDIV DDES="CKG" DDIR="TOO">direction misspelt</FDIV>`)
}
