package main

const simulateHelp = `Simulates an AODB: not written yet.`

func simulateCmd(args []string) error {
	fs := newFlags("simulate")
	if err := fs.Parse(args); err != nil {
		return exitError{code: exitUsage}
	}
	return nil
}
