package sis

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"slices"
	"strings"

	"msgx/internal/pipeline"
)

// ContentDigest returns the digest of raw's canonical content: what tells a message sent again
// from a different message that reuses its SEQN (the identity's content mode). Two documents
// have the same digest when they hold the same elements in the same order with the same
// attributes and values, whatever their layout:
//
//   - whitespace around values and between elements (indentation, tabs, line ends, none) does
//     not count, nor does whitespace around an attribute's value; whitespace inside a value does;
//   - the order of an element's attributes and their quoting do not count;
//   - `<X/>` and `<X></X>` are the same (both "no value"), and an entity or character reference
//     is the character it stands for;
//   - comments, processing instructions (the XML declaration) and directives do not count;
//   - META/DTTM counts: a re-send keeps the bytes the sender built, its DTTM included, while a
//     new operation, even one that repeats an earlier one (stand 201, 202, 201 again), is
//     stamped with a new time.
//
// Element names and values are compared exactly (case included). The digest is 32 lower-case
// hex digits (128 bits of SHA-256). raw must be well-formed XML with an MSG root, as a message
// that decoded is; anything else is a MALFORMED error.
func ContentDigest(raw []byte) (string, error) {
	d, _, err := ContentDigests(raw)
	return d, err
}

// ContentDigests returns raw's ContentDigest and its legacy digest: the same canonical content
// with META/DTTM left out, the digest msgx bound content identities with before DTTM counted
// (a re-send of a message processed then is found by it).
func ContentDigests(raw []byte) (digest, legacy string, err error) {
	h, l := sha256.New(), sha256.New()
	s := getScanner(raw, true)
	err = canonical(s, h, l)
	s.release()
	if errors.Is(err, errUnsure) {
		// The codec's scanner does not vouch for this document: encoding/xml reads it.
		h.Reset()
		l.Reset()
		err = canonical(&xmlTokens{d: NewDecoder(raw)}, h, l)
	}
	if err != nil {
		return "", "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), hex.EncodeToString(l.Sum(nil)[:16]), nil
}

// canonical writes the canonical form of the document d tokenizes to h, and to legacy the
// same with META/DTTM left out: each token with its kind and length-prefixed parts, so no two
// different documents write the same bytes.
func canonical(d tokenizer, h, legacy hash.Hash) error {
	var stack []string
	var text bytes.Buffer // the character data since the last tag
	skip := 0             // depth of the open META/DTTM, which legacy leaves out (0: none)
	root := false
	part := func(kind byte, b []byte) {
		writePart(h, kind, b)
		if skip == 0 {
			writePart(legacy, kind, b)
		}
	}
	flush := func() {
		if t := bytes.TrimSpace(text.Bytes()); len(t) > 0 {
			part('T', t)
		}
		text.Reset()
	}
	for {
		kind, err := d.next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, errUnsure) {
			return err
		}
		if err != nil {
			return pipeline.Errorf(pipeline.Malformed, "content digest: not well-formed XML: %v", err)
		}
		switch kind {
		case tokStart:
			flush()
			t := d.startElem()
			name := qname(t.Name)
			root = true
			stack = append(stack, name)
			if skip == 0 && len(stack) == 3 && stack[0] == "MSG" && stack[1] == "META" && name == "DTTM" {
				skip = len(stack)
			}
			part('S', []byte(name))
			attrs := make([][2]string, 0, len(t.Attr))
			for _, a := range t.Attr {
				attrs = append(attrs, [2]string{qname(a.Name), strings.TrimSpace(a.Value)})
			}
			slices.SortFunc(attrs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
			for _, a := range attrs {
				part('A', []byte(a[0]))
				part('V', []byte(a[1]))
			}
		case tokEnd:
			flush()
			if len(stack) == 0 {
				return pipeline.Errorf(pipeline.Malformed, "content digest: unexpected end element </%s>", qname(d.endName()))
			}
			part('E', nil)
			if skip == len(stack) {
				skip = 0
			}
			stack = stack[:len(stack)-1]
		case tokText:
			text.Write(d.charData())
		}
	}
	if len(stack) > 0 {
		return pipeline.Errorf(pipeline.Malformed, "content digest: <%s> is not closed", stack[len(stack)-1])
	}
	if !root {
		return pipeline.Errorf(pipeline.Malformed, "content digest: no element")
	}
	flush()
	return nil
}

// writePart writes one part of the canonical form: its kind, its length and its bytes.
func writePart(h hash.Hash, kind byte, b []byte) {
	var n [9]byte
	n[0] = kind
	binary.BigEndian.PutUint64(n[1:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}
