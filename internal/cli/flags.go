package cli

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// Reorder moves the flags of args before its operands, so `msgx park 12 --reason x` reads
// like `msgx park --reason x 12` (the flag package stops at the first operand).
func Reorder(fs *flag.FlagSet, args []string) []string {
	var flags, operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			operands = append(operands, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(flags, operands...)
}

// IDList collects repeated --id flags, each possibly comma-separated.
type IDList []int64

func (l *IDList) String() string { return fmt.Sprint(*l) }

// Set adds the ids of s.
func (l *IDList) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a message id", p)
		}
		*l = append(*l, n)
	}
	return nil
}
