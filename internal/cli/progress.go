package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// Progress shows how far a long command (send of many files, simulate) has got on stderr: a
// bar redrawn in place on a terminal, plain lines every few seconds otherwise (a log file, CI).
type Progress struct {
	w      io.Writer
	tty    bool
	width  int // of the terminal
	label  string
	total  int
	start  time.Time
	last   time.Time // of the last redraw or line
	every  time.Duration
	drawn  bool
	now    func() time.Time
	lastPc int
}

// NewProgress returns the progress of total steps on w (stderr): a bar when w is a terminal.
func NewProgress(w io.Writer, label string, total int) *Progress {
	p := &Progress{w: w, label: label, total: total, now: time.Now, every: 5 * time.Second}
	if IsTerminal(w) {
		p.tty = true
		p.every = 100 * time.Millisecond
		if w, _, err := term.GetSize(int(w.(*os.File).Fd())); err == nil {
			p.width = w
		}
	}
	p.start = p.now()
	p.lastPc = -1
	return p
}

// Update reports done of total steps, with a short note (what was sent last, the simulated
// time); it draws at most every 100 ms on a terminal, and writes a line every 5 s otherwise.
// A nil Progress shows nothing.
func (p *Progress) Update(done int, note string) {
	if p == nil {
		return
	}
	now := p.now()
	if done < p.total && now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	pc := 100
	if p.total > 0 {
		pc = done * 100 / p.total
	}
	elapsed := now.Sub(p.start).Round(time.Second)
	if !p.tty {
		if pc == p.lastPc && done < p.total {
			return
		}
		p.lastPc = pc
		fmt.Fprintf(p.w, "%s: %d/%d (%d%%) %s, %s\n", p.label, done, p.total, pc, elapsed, note)
		return
	}
	const barWidth = 30
	fill := barWidth * pc / 100
	line := fmt.Sprintf("%s [%s%s] %d/%d %3d%% %s %s", p.label, strings.Repeat("#", fill), strings.Repeat(".", barWidth-fill),
		done, p.total, pc, elapsed, note)
	if p.width > 0 && len([]rune(line)) >= p.width {
		line = string([]rune(line)[:p.width-1])
	}
	fmt.Fprint(p.w, "\r"+line+"\x1b[K")
	p.drawn = true
}

// Clear removes the bar from the terminal (before a line goes to stdout on the same
// terminal); the next update draws it again.
func (p *Progress) Clear() {
	if p != nil && p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
		p.last = time.Time{}
	}
}

// Finish ends the bar's line, so what follows starts on a line of its own.
func (p *Progress) Finish() {
	if p != nil && p.tty && p.drawn {
		fmt.Fprintln(p.w)
	}
}

// IsTerminal reports whether w is a terminal (a bar or a board redrawn in place shows there).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
