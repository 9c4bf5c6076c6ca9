// Package suggest finds the word a user probably meant when they mistyped one: a command, a
// flag, a configuration key, an environment variable, an error class or a target name. It is
// what turns "unknown key pipline.batch-size" into "… (did you mean pipeline.batch-size?)".
package suggest

import "strings"

// Closest returns the candidate nearest to word, or "" when none is near enough to be a
// plausible typo. Case is ignored when comparing (a class typed in lower case still finds its
// upper-case name); the candidate is returned as spelt in candidates. A candidate that word is
// a prefix of, or the other way round, counts as near when the shorter one has at least three
// characters ("pipeline.batch" → "pipeline.batch-size"). Ties go to the earlier candidate.
func Closest(word string, candidates []string) string {
	w := strings.ToLower(word)
	best, bestD := "", 0
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == w {
			return c
		}
		d := Distance(w, lc)
		if d > limit(w, lc) {
			if !prefixMatch(w, lc) {
				continue
			}
			d = limit(w, lc) // a prefix match is as good as the worst typo allowed
		}
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// DidYouMean returns " (did you mean X?)" for Closest's answer, or "" when there is none.
func DidYouMean(word string, candidates []string) string {
	if s := Closest(word, candidates); s != "" {
		return " (did you mean " + s + "?)"
	}
	return ""
}

// limit is how many edits still read as a typo: one for short words, two from five
// characters, three from twelve.
func limit(a, b string) int {
	n := min(len([]rune(a)), len([]rune(b)))
	switch {
	case n < 5:
		return 1
	case n < 12:
		return 2
	}
	return 3
}

func prefixMatch(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return len([]rune(a)) >= 3 && strings.HasPrefix(b, a)
}

// Distance is the edit distance between a and b, counting an insertion, a deletion, a
// substitution or a swap of two neighbours as one edit (optimal string alignment), by
// characters.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
